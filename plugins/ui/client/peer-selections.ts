/**
 * CodeMirror extensions for a Y.Text edited together: y-codemirror.next's sync and undo, plus the
 * collaborators' cursors and selections drawn here rather than by y-codemirror.next, which writes
 * each collaborator's colour string into a `style` attribute. Here a colour is only ever a class
 * (`dp-peer-<index>` of the server's palette, collab.css), so nothing a client sent reaches a
 * style and the page needs no inline styles (the CSP's style-src has no 'unsafe-inline').
 */
import { RangeSet, type Extension, type Range } from '@codemirror/state';
import { Decoration, EditorView, ViewPlugin, WidgetType, type DecorationSet, type ViewUpdate } from '@codemirror/view';
import { yCollab } from 'y-codemirror.next';
import * as Y from 'yjs';
import type { Awareness } from 'y-protocols/awareness';
import { peerColorIndex } from '../../notebooks/collaboration/protocol';

/** The class of a collaborator's colour (only the server's palette; anything else is the first). */
export const peerClass = (color: unknown) => `dp-peer-${peerColorIndex(color)}`;

interface PeerState {
  user?: { name?: unknown; role?: unknown; color?: unknown };
  cursor?: { anchor?: unknown; head?: unknown } | null;
}

class PeerCaret extends WidgetType {
  constructor(
    readonly colorClass: string,
    readonly label: string,
  ) {
    super();
  }
  toDOM(): HTMLElement {
    const caret = document.createElement('span');
    caret.className = `dp-peer-caret ${this.colorClass}`;
    const info = document.createElement('span');
    info.className = 'dp-peer-caret-info';
    info.textContent = this.label;
    caret.append('\u2060', info, '\u2060');
    return caret;
  }
  eq(other: PeerCaret): boolean {
    return other.colorClass === this.colorClass && other.label === this.label;
  }
  get estimatedHeight(): number {
    return -1;
  }
  ignoreEvent(): boolean {
    return true;
  }
}

function peerSelections(ytext: Y.Text, awareness: Awareness): Extension {
  return ViewPlugin.fromClass(
    class {
      decorations: DecorationSet = RangeSet.of([]);
      private readonly onChange: (change: { added: number[]; updated: number[]; removed: number[] }) => void;
      constructor(readonly view: EditorView) {
        this.onChange = ({ added, updated, removed }) => {
          if ([...added, ...updated, ...removed].some((id) => id !== awareness.clientID)) view.dispatch({});
        };
        awareness.on('change', this.onChange);
      }
      destroy() {
        awareness.off('change', this.onChange);
      }
      update(update: ViewUpdate) {
        this.publishOwnCursor(update);
        const doc = ytext.doc!;
        const marks: Array<Range<Decoration>> = [];
        awareness.getStates().forEach((raw, id) => {
          if (id === awareness.clientID) return;
          const state = raw as PeerState;
          const cursor = state.cursor;
          if (!cursor?.anchor || !cursor.head) return;
          const anchor = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(cursor.anchor), doc);
          const head = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(cursor.head), doc);
          if (!anchor || !head || anchor.type !== ytext || head.type !== ytext) return;
          const length = update.state.doc.length;
          const from = Math.min(anchor.index, head.index, length);
          const to = Math.min(Math.max(anchor.index, head.index), length);
          const colorClass = peerClass(state.user?.color);
          if (from < to) marks.push(Decoration.mark({ class: `dp-peer-selection ${colorClass}` }).range(from, to));
          const name = typeof state.user?.name === 'string' ? state.user.name : 'someone';
          const role = typeof state.user?.role === 'string' ? ` (${state.user.role})` : '';
          marks.push(Decoration.widget({ side: head.index - anchor.index > 0 ? -1 : 1, widget: new PeerCaret(colorClass, name + role) }).range(Math.min(head.index, length)));
        });
        this.decorations = Decoration.set(marks, true);
      }
      /** Our own selection, as Yjs relative positions (y-codemirror.next's `cursor` field, so notebooks and files agree). */
      private publishOwnCursor(update: ViewUpdate) {
        const local = awareness.getLocalState() as PeerState | null;
        if (!local) return;
        const focused = update.view.hasFocus && update.view.dom.ownerDocument.hasFocus();
        if (!focused) return;
        const sel = update.state.selection.main;
        const anchor = Y.createRelativePositionFromTypeIndex(ytext, sel.anchor);
        const head = Y.createRelativePositionFromTypeIndex(ytext, sel.head);
        const current = local.cursor;
        const same =
          current?.anchor &&
          current.head &&
          Y.compareRelativePositions(Y.createRelativePositionFromJSON(current.anchor), anchor) &&
          Y.compareRelativePositions(Y.createRelativePositionFromJSON(current.head), head);
        if (!same) awareness.setLocalStateField('cursor', { anchor, head });
      }
    },
    { decorations: (v) => v.decorations },
  );
}

/** Sync with `ytext`, undo of one's own edits, and everyone else's cursors and selections. */
export function collaborationExtensions(ytext: Y.Text, awareness: Awareness, undoManager = new Y.UndoManager(ytext)): Extension {
  // No awareness handed to y-codemirror.next: its remote selections write colours into styles.
  return [yCollab(ytext, null, { undoManager }), peerSelections(ytext, awareness)];
}
