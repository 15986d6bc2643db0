import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, RoutePermission } from './auth.js';
import type { ProjectInfo } from './config.js';
import type { DatabasePort, DbConnection, MigrationSet } from './db.js';
import type { HookName, KernelHooks, QueryContext, QueryPurpose, QueryResult, TapFn } from './hooks.js';

// ---------------------------------------------------------------- manifest

export interface ManifestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Fastify path syntax: `/api/tables/:schema/:table`. */
  url: string;
  permission: RoutePermission;
}

/** yargs option spec, kept JSON so `dp --help` needs no plugin code. */
export interface ManifestOption {
  type?: 'string' | 'number' | 'boolean' | 'array' | 'count';
  describe?: string;
  alias?: string | string[];
  default?: unknown;
  choices?: unknown[];
  demandOption?: boolean;
}

export interface ManifestCommand {
  /** yargs command string: `lineage <model>`, `mask`, `add`. */
  command: string;
  describe: string;
  options?: Record<string, ManifestOption>;
  positionals?: Record<string, ManifestOption>;
  /** Nested subcommands (`mask add`). */
  commands?: ManifestCommand[];
}

export interface PluginManifest {
  name: string;
  version: string;
  description?: string;
  entry: string;
  requires?: string[];
  contributes?: {
    routes?: ManifestRoute[];
    commands?: ManifestCommand[];
    hooks?: HookName[];
    services?: string[];
    extensionPoints?: string[];
    /** Extension points of other plugins this plugin extends. */
    extends?: string[];
  };
}

// ---------------------------------------------------------------- routes

export interface JsonSchema {
  [key: string]: unknown;
}

export interface RouteRequest<B = any, Q = any, P = any> {
  body: B;
  query: Q;
  params: P;
  caller: Caller;
  headers: Record<string, string | string[] | undefined>;
  ip: string;
  raw: FastifyRequest;
}

export interface RouteDefinition<B = any, Q = any, P = any> {
  method: ManifestRoute['method'];
  url: string;
  /** Must equal the manifest's entry for this method and url; enforced before the handler runs. */
  permission: RoutePermission;
  summary?: string;
  description?: string;
  tags?: string[];
  schema?: { body?: JsonSchema; querystring?: JsonSchema; params?: JsonSchema; response?: Record<number, JsonSchema> };
  /** Body limit in bytes (default: fastify's 1 MiB). */
  bodyLimit?: number;
  /** Return the JSON body, or use `reply` to stream (then return `reply`). */
  handler(req: RouteRequest<B, Q, P>, reply: FastifyReply): unknown | Promise<unknown>;
}

// ---------------------------------------------------------------- cli

export interface CliIO {
  /** Writes a line to stdout. */
  out(text: string): void;
  /** Writes a line to stderr. */
  err(text: string): void;
  /** Pretty JSON to stdout. */
  json(value: unknown): void;
  /** A text table to stdout. */
  table(rows: Array<Record<string, unknown>>, columns?: string[]): void;
  /** Progress line on stderr (a rewriting line on a TTY, plain lines otherwise). */
  progress(text: string): void;
  /** True when the user passed --json. */
  readonly wantsJson: boolean;
}

/** Returns the process exit code (default 0). */
export type CommandHandler = (args: Record<string, any>, io: CliIO) => Promise<number | void> | number | void;

// ---------------------------------------------------------------- events

export interface EventBus {
  emit(type: string, payload?: Record<string, unknown>): void;
  /** Returns an unsubscribe function. `*` receives every event. */
  on(type: string, listener: (event: BusEvent) => void): () => void;
}

export interface BusEvent {
  type: string;
  at: string;
  payload: Record<string, unknown>;
}

// ---------------------------------------------------------------- services

export interface ServiceRegistry {
  /** Registers a service this plugin declared in `contributes.services`. */
  provide<T>(name: string, service: T): void;
  /** A service; throws a clear error naming it when its plugin is disabled or absent. */
  get<T>(name: string): T;
  /** A service, or undefined when its plugin is disabled. */
  find<T>(name: string): T | undefined;
}

export interface Logger {
  info(msg: string, data?: Record<string, unknown>): void;
  warn(msg: string, data?: Record<string, unknown>): void;
  error(msg: string, data?: Record<string, unknown>): void;
  debug(msg: string, data?: Record<string, unknown>): void;
}

export interface SecretsStore {
  /** Keys in .env with masked values. */
  list(): Array<{ key: string; masked_value: string }>;
  get(key: string): string | undefined;
  /** Writes .env atomically (temp + rename), keeping other lines and comments. */
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<boolean>;
}

/** Checks the shared secret of incoming webhook calls (SPEC.md Authentication 10). */
export interface WebhookGuard {
  /** The header the caller sends the secret in. */
  readonly header: 'x-service-webhook-secret';
  /**
   * Returns when the call may proceed: `SERVICE_WEBHOOK_OPEN=true`, or the header equals
   * `SERVICE_WEBHOOK_SECRET_<NAME>` (name upper-cased, other characters as `_`), else
   * `SERVICE_WEBHOOK_SECRET` (constant-time comparison). Otherwise throws DpError 401
   * `webhook_secret_required` (no header), 403 `webhook_secret_invalid` (wrong secret) or
   * 403 `webhook_not_configured` (no secret set). Reads the project's .env, then the process environment.
   */
  verify(webhookName: string, headerValue: string | string[] | undefined): void;
}

export interface UserQueryRequest {
  sql: string;
  params?: Record<string, unknown>;
  limit?: number;
  offset?: number;
  caller: Caller;
  purpose: QueryPurpose;
  table?: { schema: string; table: string };
  /** Aborts the query (the client went away): it is interrupted and never started if still waiting. */
  signal?: AbortSignal;
}

/**
 * The kernel's guarded runner for SQL a user sent: every plugin that runs user SQL goes
 * through it so interceptQuery/beforeQuery/afterQuery (masking) and read-only validation apply.
 */
export interface QueryRunner {
  run(req: UserQueryRequest): Promise<QueryResult>;
  /** Constant-memory stream (no row limit), with the same hooks and row transforms. */
  stream(req: UserQueryRequest): Promise<{ columns: string[]; column_types: string[]; chunks: AsyncIterable<unknown[][]>; context: QueryContext }>;
  /** Runs only the hooks and validation, returning the SQL that would run. */
  prepare(req: UserQueryRequest): Promise<QueryContext>;
  /** Read-only validation alone; throws DpError 400 `read_only_violation`. */
  assertReadOnly(sql: string): Promise<void>;
  /**
   * Runs `fn` under the caller's role deadline and a query slot, like `run` (for SQL built on
   * `prepare`'s result, such as EXPLAIN): `fn`'s connection is interrupted at the deadline or
   * when `req.signal` aborts, and the call throws 408 `query_timeout` at the deadline.
   */
  withDeadline<T>(req: Pick<UserQueryRequest, 'caller' | 'purpose' | 'signal'>, fn: (c: DbConnection) => Promise<T>): Promise<T>;
}

export interface PluginContext {
  readonly manifest: PluginManifest;
  readonly project: ProjectInfo;
  readonly db: DatabasePort;
  readonly hooks: KernelHooks;
  readonly events: EventBus;
  readonly services: ServiceRegistry;
  readonly secrets: SecretsStore;
  readonly queries: QueryRunner;
  /** Shared-secret check for routes that receive webhooks (declare them `public`). */
  readonly webhooks: WebhookGuard;
  readonly log: Logger;
  /** Variables from the project's .env (the only source of ${VAR}). */
  readonly env: Readonly<Record<string, string>>;
  /** True when the process is `dp serve` (false for one-shot CLI commands). */
  readonly serving: boolean;
  /** Registers an HTTP route declared in the manifest. */
  route<B = any, Q = any, P = any>(def: RouteDefinition<B, Q, P>): void;
  /** Handles a CLI command declared in the manifest, by its path: `transform`, `mask add`. */
  command(path: string, handler: CommandHandler): void;
  /** Taps a kernel hook declared in the manifest's `contributes.hooks`. */
  tap<H extends HookName>(hook: H, fn: TapFn<H>, options?: { stage?: number }): void;
  /** Idempotent migrations in the _service schema, run when the database opens. */
  migrate(steps: MigrationSet['steps']): void;
  /** Offers an extension point declared in `contributes.extensionPoints`. */
  provideExtensionPoint<T>(name: string, accept: (contribution: T, fromPlugin: string) => void): void;
  /** Contributes to another plugin's extension point (declared in `contributes.extends`). */
  extend<T>(name: string, contribution: T): void;
  /** Called once the database is open and migrated, before the server listens. */
  onStart(fn: () => Promise<void> | void): void;
  /** Called on shutdown (and before the database is reopened on an environment switch). */
  onStop(fn: () => Promise<void> | void): void;
}

export interface PluginDefinition {
  setup(ctx: PluginContext): void | Promise<void>;
}

/** The one way to write a plugin: `export default definePlugin({ setup(ctx) { ... } })`. */
export function definePlugin(def: PluginDefinition): PluginDefinition {
  return def;
}

export type { QueryContext, QueryResult };
