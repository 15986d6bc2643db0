/**
 * @dp/ui/graph: directed graphs (model DAGs, lineage, impact) drawn with @xyflow/react and laid
 * out with dagre. Nodes are clickable (and focusable: Enter opens them).
 */
import { useMemo } from 'react';
import { Background, Controls, MarkerType, MiniMap, ReactFlow, type Edge, type Node, type NodeMouseHandler } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { Graph as DagreGraph, layout } from '@dagrejs/dagre';
import { Icon } from './components';

export interface GraphNode {
  id: string;
  label: string;
  /** A second line under the label (materialization, type …). */
  sublabel?: string;
  /** Colours the node: model, source, seed, table, column, selected, error, ok … */
  kind?: string;
  /** Set for a masked column: the tooltip saying how it is masked; the node shows a lock. */
  masked?: string;
  /** Drawn faded (outside a selection). */
  dimmed?: boolean;
  /** Drawn with a ring (inside a selection). */
  highlighted?: boolean;
  /** The node's state as a word, in `data-status` (tests, styles) and the tooltip. */
  status?: string;
  /** The node's tooltip (when not masked). */
  title?: string;
}

export interface GraphEdge {
  from: string;
  to: string;
  label?: string;
}

export interface GraphProps {
  nodes: GraphNode[];
  edges: GraphEdge[];
  onNodeClick?: (node: GraphNode) => void;
  /** LR (default): sources left, dependents right. */
  direction?: 'LR' | 'TB';
  height?: number | string;
  /** The node to mark as the current one. */
  selected?: string | null;
  ariaLabel?: string;
  /** Show the minimap (default: for graphs of more than 12 nodes). */
  minimap?: boolean;
}

const NODE_W = 190;
const NODE_H = 46;

/** Positions from dagre's layered layout. */
export function layoutGraph(nodes: GraphNode[], edges: GraphEdge[], direction: 'LR' | 'TB' = 'LR'): Map<string, { x: number; y: number }> {
  const g = new DagreGraph();
  g.setGraph({ rankdir: direction, nodesep: 24, ranksep: 70, marginx: 10, marginy: 10 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
  const ids = new Set(nodes.map((n) => n.id));
  for (const e of edges) if (ids.has(e.from) && ids.has(e.to)) g.setEdge(e.from, e.to);
  layout(g);
  const out = new Map<string, { x: number; y: number }>();
  for (const n of nodes) {
    const p = g.node(n.id) as { x: number; y: number } | undefined;
    out.set(n.id, { x: (p?.x ?? 0) - NODE_W / 2, y: (p?.y ?? 0) - NODE_H / 2 });
  }
  return out;
}

export function Graph({ nodes, edges, onNodeClick, direction = 'LR', height = 480, selected = null, ariaLabel = 'Graph', minimap }: GraphProps) {
  const flow = useMemo(() => {
    const pos = layoutGraph(nodes, edges, direction);
    const ids = new Set(nodes.map((n) => n.id));
    const rfNodes: Node[] = nodes.map((n) => ({
      id: n.id,
      position: pos.get(n.id)!,
      data: {
        label: (
          <div className="dp-node-label" data-node-id={n.id} data-masked={n.masked ? 'true' : undefined} data-status={n.status} data-highlighted={n.highlighted ? 'true' : undefined} title={n.masked ?? n.title}>
            <div className="dp-node-title">
              {n.masked ? <Icon name="lock" size={12} /> : null}
              {n.label}
            </div>
            {n.sublabel ? <div className="dp-node-sub">{n.sublabel}</div> : null}
          </div>
        ),
      },
      className: `dp-node dp-node-${n.kind ?? 'default'}${selected === n.id ? ' dp-node-selected' : ''}${n.masked ? ' dp-node-masked' : ''}${n.dimmed ? ' dp-node-dimmed' : ''}${n.highlighted ? ' dp-node-highlighted' : ''}`,
      style: { width: NODE_W, height: NODE_H },
      // Known sizes: the minimap draws only nodes whose size it knows, and these nodes are
      // controlled (their measured size is never written back).
      width: NODE_W,
      height: NODE_H,
      sourcePosition: (direction === 'LR' ? 'right' : 'bottom') as Node['sourcePosition'],
      targetPosition: (direction === 'LR' ? 'left' : 'top') as Node['targetPosition'],
      ariaLabel: n.masked ? `${n.label} (masked)` : n.label,
    }));
    const rfEdges: Edge[] = edges
      .filter((e) => ids.has(e.from) && ids.has(e.to))
      .map((e, i) => ({ id: `e${i}-${e.from}-${e.to}`, source: e.from, target: e.to, label: e.label, markerEnd: { type: MarkerType.ArrowClosed } }));
    return { rfNodes, rfEdges };
  }, [nodes, edges, direction, selected]);
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  const click: NodeMouseHandler = (_e, node) => {
    const n = byId.get(node.id);
    if (n && onNodeClick) onNodeClick(n);
  };
  return (
    <div className="dp-graph" style={{ height }} aria-label={ariaLabel} data-testid="graph">
      <ReactFlow
        nodes={flow.rfNodes}
        edges={flow.rfEdges}
        onNodeClick={click}
        nodesDraggable={false}
        nodesConnectable={false}
        fitView
        fitViewOptions={{ padding: 0.15, maxZoom: 1.1 }}
        minZoom={0.1}
        proOptions={{ hideAttribution: true }}
        colorMode="system"
      >
        <Background />
        <Controls showInteractive={false} />
        {(minimap ?? nodes.length > 12) ? <MiniMap pannable zoomable nodeClassName={(node) => String(node.className ?? '')} ariaLabel="Minimap" /> : null}
      </ReactFlow>
    </div>
  );
}
