/**
 * The agents plugin's public contract: what a plugin offers AI agents. Through the MCP server
 * (`dp mcp`, `POST /mcp`), tools and resources contributed to `agents.mcp`; through `dp context`,
 * sections contributed to `agents.context`; each by the plugin that owns the feature. The agents
 * plugin lists no other plugin: a disabled plugin's tools and sections simply do not appear.
 * Tools are built per caller when a server is built, so a role sees exactly its own.
 */
import type { z, ZodRawShape } from 'zod';
import { schemaHiddenFrom, type Caller, type Permission } from './auth.js';
import type { ColumnSource } from './lineage.js';
import { createExtensionPoint } from './refs.js';

/** Rows a row-returning tool answers unless the agent asks for more, and the most it may ask for. */
export const AGENT_QUERY_DEFAULT_ROWS = 100;
export const AGENT_QUERY_MAX_ROWS = 1000;
/** Longest list a listing tool returns before it cuts and says so. */
export const AGENT_LIST_MAX_ITEMS = 200;

export interface AgentTool {
  name: string;
  /** Written for an agent: what it answers, when to use it, what to pass. */
  description: string;
  /** A zod shape (the MCP SDK turns it into the JSON schema the client sees). */
  input: ZodRawShape;
  /** Left out for a caller without it; a `dp mcp --read-only` server offers only `read` tools. */
  permission: Permission;
  run(args: Record<string, any>): Promise<unknown>;
  /** The answer holds query rows (masked by the guarded runner), not error texts to redact. */
  returnsRows?: boolean;
}

/** What the agents plugin hands a contribution when it builds a server for one caller. */
export interface AgentToolKit {
  readonly caller: Caller;
  /** zod, loaded with the MCP SDK on the first MCP request (so no plugin pays for it at boot). */
  readonly z: typeof z;
  /** `dp mcp --read-only`: tools that change anything are not offered. */
  readonly readOnly: boolean;
  /**
   * Lower-case names of the columns of `schema.table` that come back masked for the caller, as
   * the guarded query runner reports them (empty when nothing masks them).
   */
  maskedColumns(schema: string, table: string): Promise<Set<string>>;
}

/** One MCP resource at a fixed URI. */
export interface AgentResource {
  name: string;
  uri: string;
  title: string;
  description: string;
  mimeType: string;
  read(): Promise<string>;
}

/** MCP resources under a URI template with one variable (`dp://wiki/{slug}`). */
export interface AgentResourceTemplate {
  name: string;
  /** A URI template with exactly one `{variable}`. */
  uriTemplate: string;
  title: string;
  description: string;
  mimeType: string;
  /** The resources it holds now. */
  list(): Array<{ value: string; title: string; description: string }>;
  /** Reads one resource by the value of its variable; throws a DpError (404) for an unknown one. */
  read(value: string): Promise<{ title?: string; text: string }>;
}

/** A plugin's contribution to the MCP server. */
export interface AgentContribution {
  tools?(kit: AgentToolKit): AgentTool[] | Promise<AgentTool[]>;
  resources?(caller: Caller): Array<AgentResource | AgentResourceTemplate> | Promise<Array<AgentResource | AgentResourceTemplate>>;
}

export const AGENT_MCP = createExtensionPoint<AgentContribution>('agents.mcp');

/**
 * A section of `dp context`'s project description (AGENTS.md), written by the plugin that owns
 * the feature (quality its contracts, semantic its metrics, streams its streams, masking its
 * policies in words). A disabled plugin's section is simply absent. What it writes is read by
 * agents and kept in the repository: never a data value, a configuration value that may hold
 * one, or a secret.
 */
export interface ContextSection {
  /** The heading (`Streams`). */
  title: string;
  /** Orders the contributed sections (lower first); they follow the models, seeds, sources and connections. */
  order: number;
  /**
   * The section's Markdown lines, after its heading (none leaves the section out), and what it
   * could not read (a broken file), listed under the description's "Problems found".
   */
  write(): Promise<{ lines: string[]; problems?: string[] }>;
}

/** A plugin's contribution to `dp context`: a section, or the column lineage of models (the models section's "from" column). */
export interface ContextContribution {
  section?: ContextSection;
  /** Column → upstream columns of a model (`schema.name`); throws when it cannot tell. */
  columnLineage?(model: string): Promise<Record<string, ColumnSource[]>>;
}

export const AGENT_CONTEXT = createExtensionPoint<ContextContribution>('agents.context');

/** `list` cut to `max` items, with a note saying how many were left out. */
export function cappedList<T>(list: T[], max = AGENT_LIST_MAX_ITEMS): { items: T[]; note?: string } {
  if (list.length <= max) return { items: list };
  return { items: list.slice(0, max), note: `showing ${max} of ${list.length}; narrow the request to see the rest` };
}

/** True when `schema.name` lies in a schema the caller's role may not see. */
export function relationHiddenFrom(relation: string, caller: Caller): boolean {
  const dot = relation.lastIndexOf('.');
  return dot > 0 && schemaHiddenFrom(relation.slice(0, dot), caller.role);
}

/** The relations (`schema.name`) of a list the caller's role may see. */
export function visibleRelations(relations: string[], caller: Caller): string[] {
  return relations.filter((r) => !relationHiddenFrom(r, caller));
}
