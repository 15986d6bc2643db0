import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, Permission, RoutePermission } from './auth.js';
import type { ConfigRef, PluginConfig, ProjectInfo } from './config.js';
import type { DatabasePort, DbConnection, MigrationSet } from './db.js';
import type { FireableHook, HookKind, HookTarget, QueryContext, QueryPurpose, QueryResult, TapFn } from './hooks.js';
import type { QueryStopSignal, RouteKind, RouteRequest, SseRouteDefinition, StaticRouteDefinition, WebSocketRouteDefinition } from './routes.js';
import type { QueryTarget } from './query-target.js';
import type { ManifestUi } from './ui.js';
import type { NotifierService } from './notifier.js';
import type { Clock, SchedulerService } from './scheduler.js';
import type { EventRef, ExtensionPointRef, ServiceRef } from './refs.js';

export type { QueryStopSignal, RouteRequest } from './routes.js';

// ---------------------------------------------------------------- manifest

export interface ManifestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Fastify path syntax: `/api/tables/:schema/:table`. */
  url: string;
  permission: RoutePermission;
  /** `json` (the default), `websocket`, `sse` or `static` (sdk/routes.ts). */
  kind?: RouteKind;
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
  /**
   * Set when this plugin adds an option to a top-level command another plugin declares (the
   * versioning plugin's `diff --snapshot` beside the models plugin's `diff`): the CLI shows one
   * command with both plugins' options and runs this plugin's handler when the named option is
   * given, the other plugin's otherwise. Names one of `options`.
   */
  whenOption?: string;
  /**
   * The command runs where there is no project yet (`dp init <folder>`): when --project holds no
   * project.yml, the CLI boots on an empty temporary project, removed afterwards.
   */
  withoutProject?: boolean;
  /**
   * What a caller needs to run the command through a running `dp serve` (docs/cli.md): the same
   * permissions as routes. Absent means `execute`, so a viewer never runs an undeclared command.
   */
  permission?: Permission;
  /** A stronger permission the command needs when an option is given (`docs --out` writes a file: `{ "out": "write" }`). */
  permissionWhenOption?: Record<string, Permission>;
  /**
   * The command runs in the CLI's own process even while `dp serve` holds the database, because
   * it relays to the server itself (`ctx.localServer()`), as `dp mcp` does.
   */
  runsBesideServer?: boolean;
  /**
   * Set when the command cannot run inside a running server (it serves stdio, replaces the
   * database, creates a project): the reason, shown to a user who tries while `dp serve` holds
   * the database.
   */
  runsOnlyLocally?: string;
}

/** A hook point a plugin owns (`contributes.hookPoints`); others tap it by listing its name under `hooks`. */
export interface ManifestHookPoint {
  /** `<plugin>.<point>`, e.g. `streams.runQueued`. */
  name: string;
  kind: HookKind;
  /** Names of the tap arguments (documentation). */
  args?: string[];
  description: string;
}

export interface PluginManifest {
  name: string;
  version: string;
  description?: string;
  entry: string;
  /** Plugins that must be installed and enabled; they set up first. */
  requires?: string[];
  /** Plugins used when present (their services); they set up first when enabled. */
  optional?: string[];
  /**
   * Of `requires` and `optional`: plugins whose services this plugin looks up only with
   * `await ctx.services.load(ref)`. A one-shot command then loads them on that first lookup, not
   * at boot (masking follows lineage only when a policy exists); a synchronous `get`/`find` of
   * such a service while its plugin is not loaded is refused (`service_not_loaded`).
   */
  onDemand?: string[];
  contributes?: {
    routes?: ManifestRoute[];
    commands?: ManifestCommand[];
    /** Hooks the plugin taps: kernel hook names (the query path's), or `<plugin>.<point>` of an installed plugin (no dependency needed). */
    hooks?: string[];
    /** Other plugins' hook points the plugin fires (`masking.valuesHiddenFrom`); only the kernel fires kernel hooks. */
    fires?: string[];
    /** Hook points the plugin owns and fires. */
    hookPoints?: ManifestHookPoint[];
    services?: string[];
    extensionPoints?: string[];
    /**
     * Of `extensionPoints`: points the plugin reads only after `await ctx.loadExtensions(ref)`
     * (what `dp validate` or a route reads, not what every command of the plugin runs). A
     * one-shot command then loads their contributors on that first read, not at boot.
     */
    onDemandExtensionPoints?: string[];
    /** Extension points of other plugins this plugin extends. */
    extends?: string[];
    /** Top-level keys of project.yml the plugin owns; their schemas are the `config` refs of its definePlugin(). */
    configuration?: string[];
    /** Web UI pages (sdk/ui.ts, docs/ui.md). */
    ui?: ManifestUi;
  };
}

/** An enabled plugin as other plugins may see it: its manifest and its folder. */
export interface EnabledPlugin {
  readonly manifest: PluginManifest;
  /** Absolute folder of the plugin (where its plugin.json is). */
  readonly dir: string;
}

// ---------------------------------------------------------------- routes

export interface JsonSchema {
  [key: string]: unknown;
}

export interface RouteDefinition<B = any, Q = any, P = any> {
  kind?: 'json';
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
  /**
   * Takes a multipart/form-data upload, read by the handler with `req.raw.parts()` (its own size
   * limits). Other routes refuse that content type with 415.
   */
  uploads?: boolean;
  /** Return the JSON body, or use `reply` to stream (then return `reply`). */
  handler(req: RouteRequest<B, Q, P>, reply: FastifyReply): unknown | Promise<unknown>;
}

/** Any route a plugin registers: JSON (the default) or one of the kinds in sdk/routes.ts. */
export type AnyRouteDefinition = RouteDefinition | WebSocketRouteDefinition | SseRouteDefinition | StaticRouteDefinition;

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
  /**
   * Who runs the command: LOCAL_ADMIN at the CLI; the logged-in user (with their role, masking
   * and limits) when the CLI sends the command to a running `dp serve` with --auth. Handlers
   * pass `io.caller ?? LOCAL_ADMIN` wherever a route would pass `req.caller` (the kernel always
   * sets it; it is optional only for hand-made IOs in tests).
   */
  readonly caller?: Caller;
}

/** Returns the process exit code (default 0). */
export type CommandHandler = (args: Record<string, any>, io: CliIO) => Promise<number | void> | number | void;

// ---------------------------------------------------------------- events

/**
 * The in-process event bus. An event is named by the ref its emitter declares in its contract
 * module (`ctx.events.emit(MODEL_END, {...})`, `ctx.events.on(CATALOG_CHANGED, (e) => ...)`),
 * which types the payload on both sides. A plain string name is accepted too (JavaScript
 * plugins); it is the same event: the ref's id is its type on the bus.
 */
export interface EventBus {
  emit<P extends object>(event: EventRef<P>, payload: P): void;
  emit(type: string, payload?: Record<string, unknown>): void;
  /** Returns an unsubscribe function. `*` receives every event. */
  on<P extends object>(event: EventRef<P>, listener: (event: BusEvent<P>) => void): () => void;
  on(type: string, listener: (event: BusEvent) => void): () => void;
}

export interface BusEvent<P extends object = Record<string, unknown>> {
  /** The event's name (its ref's id). */
  type: string;
  at: string;
  payload: P;
}

// ---------------------------------------------------------------- services

export { createEventRef, createExtensionPoint, createServiceRef, type EventRef, type ExtensionPointRef, type ServiceRef } from './refs.js';

/**
 * Services by typed ref. A plugin provides only what its manifest lists under
 * `contributes.services`, and looks up only services of plugins it lists under `requires` or
 * `optional` (the kernel refuses any other lookup, naming both plugins).
 */
export interface ServiceRegistry {
  /** Registers a service this plugin declared in `contributes.services`; a second provider is refused. */
  provide<T>(ref: ServiceRef<T>, service: T): void;
  /** A service; throws DpError `service_unavailable` naming its plugin when that plugin is disabled or absent. */
  get<T>(ref: ServiceRef<T>): T;
  /** A service, or undefined when its (optional) plugin is disabled or absent. */
  find<T>(ref: ServiceRef<T>): T | undefined;
  /**
   * A service, its plugin loaded and set up first when this process has not loaded it yet
   * (a one-shot command loads only what it needs, docs/plugins.md "Activation on demand");
   * undefined when its (optional) plugin is disabled or absent. The way to look up a plugin
   * listed under `onDemand`.
   */
  load<T>(ref: ServiceRef<T>): Promise<T | undefined>;
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

/** Checks the shared secret of incoming webhook calls (docs/decisions.md "Authentication" 10). */
export interface WebhookGuard {
  /** The header the caller sends the secret in. */
  readonly header: 'x-service-webhook-secret';
  /**
   * Returns when the call may proceed: `SERVICE_WEBHOOK_OPEN=true`, or the header equals
   * `SERVICE_WEBHOOK_SECRET_<NAME>` (name upper-cased, other characters as `_`), else
   * `SERVICE_WEBHOOK_SECRET` (constant-time comparison). Otherwise throws DpError 401
   * `webhook_secret_required` (no header), 401 `webhook_secret_invalid` (wrong secret) or
   * 403 `webhook_not_configured` (no secret set). Reads the project's .env, then the process environment.
   * Wrong secrets are counted per webhook and `client` (pass `req.ip`; without it every caller
   * shares one count) like failed logins: past the limit, 429 `too_many_webhook_failures` with
   * Retry-After, whatever the secret.
   */
  verify(webhookName: string, headerValue: string | string[] | undefined, client?: string): void;
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
  signal?: QueryStopSignal;
  /** Run on this warehouse target instead of the DuckDB file (sdk/query-target.ts). */
  target?: QueryTarget;
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
  readonly events: EventBus;
  readonly services: ServiceRegistry;
  readonly secrets: SecretsStore;
  readonly queries: QueryRunner;
  /** Shared-secret check for routes that receive webhooks (declare them `public`). */
  readonly webhooks: WebhookGuard;
  /** The one sender of outgoing webhooks (sdk/notifier.ts): timeout, one retry, a throttle per receiver, deliveries naming the origin only. */
  readonly notifier: NotifierService;
  readonly log: Logger;
  /** Variables from the project's .env (the only source of ${VAR}). */
  readonly env: Readonly<Record<string, string>>;
  /** True when the process is `dp serve` (false for one-shot CLI commands). */
  readonly serving: boolean;
  /**
   * True when the plugin may start work on the wall clock (cron schedules, periodic re-reads):
   * `dp serve`, unless started with `--no-scheduler`. False for CLI commands and for test servers
   * unless the test asks (a test about time moves a clock it owns).
   */
  readonly scheduling: boolean;
  /**
   * The kernel's scheduler (sdk/scheduler.ts): cron tasks that run once every plugin has started,
   * never overlapping, aborted at their timeout and before shutdown; they run only when `scheduling`.
   */
  readonly scheduler: SchedulerService;
  /**
   * Where a plugin reads the time and sets its timers for time-based behaviour (idle release,
   * cache age): the system clock, or the clock a test owns and moves (BootOptions.clock).
   */
  readonly clock: Clock;
  /**
   * For a CLI command that relays to a running `dp serve` of this project (manifest
   * `runsBesideServer`, e.g. `dp mcp` relaying stdio to `/mcp`): the server's address and the
   * headers that authenticate this CLI user there (their `dp login` token with --auth), or null
   * when no server of the project runs. Throws `login_required` when the server needs a login
   * the user has not made. Absent in contexts the kernel did not make (tests).
   */
  localServer?(): Promise<{ url: string; headers: Record<string, string> } | null>;
  /** Every enabled plugin (manifest and folder), in setup order: for plugins that present others' contributions, such as the web UI. */
  enabledPlugins(): ReadonlyArray<EnabledPlugin>;
  /** Registers an HTTP route declared in the manifest (with the same `kind`). */
  route<B = any, Q = any, P = any>(def: RouteDefinition<B, Q, P> | WebSocketRouteDefinition | SseRouteDefinition | StaticRouteDefinition): void;
  /** Handles a CLI command declared in the manifest, by its path: `transform`, `mask add`. */
  command(path: string, handler: CommandHandler): void;
  /**
   * The live configuration: `ctx.config(ref)` is this plugin's part of project.yml (the key of
   * `ref`, validated against its schema, errors naming the line, defaults filled in; only keys
   * the plugin declares), current at every call; `subscribe`, `edit`, `setConnection`,
   * `asWritten`, `lineOf` (sdk/config.ts PluginConfig).
   */
  readonly config: PluginConfig;
  /**
   * Taps a hook listed in the manifest's `contributes.hooks`: a kernel hook (the query path's) by
   * name, or a plugin's hook point by the ref its owner's contract module exports (a no-op when
   * that plugin is disabled).
   */
  tap<T extends HookTarget>(hook: T, fn: TapFn<T>, options?: { stage?: number }): void;
  /**
   * The firing side of a hook point the plugin owns, or of another plugin's listed in
   * `contributes.fires` (reaching nobody when that plugin is disabled). Refused at once for any
   * other hook, the kernel's included, so call it during setup.
   */
  hook<T extends HookTarget>(hook: T): FireableHook<T>;
  /** Idempotent migrations in the _service schema, run when the database opens. */
  migrate(steps: MigrationSet['steps']): void;
  /**
   * Offers an extension point declared in `contributes.extensionPoints`. Contributions arrive
   * during setup; the point closes when every plugin's setup has run (a later extend is refused).
   */
  provideExtensionPoint<T>(ref: ExtensionPointRef<T>, accept: (contribution: T, fromPlugin: string) => void): void;
  /**
   * Before reading an extension point listed under `contributes.onDemandExtensionPoints`: loads
   * the enabled plugins that extend it and that this process has not loaded (a one-shot command
   * loads them on this first read, docs/plugins.md "Activation on demand"); their contributions
   * reach the point's `accept` before it resolves. A no-op when they are loaded (`dp serve`).
   */
  loadExtensions<T>(ref: ExtensionPointRef<T>): Promise<void>;
  /**
   * Contributes to another plugin's extension point, declared in `contributes.extends`. The owner
   * needs no place in `requires` or `optional`: a contribution made before the owner sets up waits
   * for it, and one to a disabled owner is a no-op.
   */
  extend<T>(ref: ExtensionPointRef<T>, contribution: T): void;
  /**
   * Called once the database is open and migrated: `dp serve` before it listens (and again after
   * maintenance or an environment switch reopens the file), a CLI command when it first touches
   * the database. Bounded by a per-plugin deadline (30 s); a failure or timeout fails the boot.
   */
  onStart(fn: () => Promise<void> | void): void;
  /**
   * First step of stopping (shutdown, maintenance, environment switch), before in-flight work is
   * drained: stop schedulers, close sockets, take no new work. Only after onStart ran; 10 s deadline.
   */
  onBeforeStop(fn: () => Promise<void> | void): void;
  /**
   * Last step of stopping, after in-flight work drained and before the database closes: flush
   * and release. Runs exactly when onStart ran (CLI and server alike); 10 s deadline, logged.
   */
  onStop(fn: () => Promise<void> | void): void;
  /**
   * Aborted when running work must end: shutdown, maintenance, an environment switch. Read it
   * when a run begins (it is replaced by a fresh one at each start) and hand it to the run's context.
   */
  readonly signal: AbortSignal;
  /**
   * Runs `fn` with the database file closed, through the kernel's maintenance: new requests are
   * answered 503 `maintenance` (with Retry-After, naming `reason`), runs are told to stop, the
   * write lock is taken, in-flight work drains (interrupted after 10 s), plugins stop, the file
   * closes; then `fn` gets its path (replace it, move it), and the file the project names is
   * reopened, migrated and started even when `fn` fails. Never call it from inside
   * `ctx.db.exclusive` or while holding a connection. A second maintenance meanwhile is refused 503.
   */
  maintenance<T>(reason: string, fn: (file: { path: string }) => Promise<T> | T): Promise<T>;
}

export interface PluginDefinition {
  /** The schemas of the project.yml keys the manifest lists under `contributes.configuration`. */
  config?: ReadonlyArray<ConfigRef<any>>;
  setup(ctx: PluginContext): void | Promise<void>;
}

/** The one way to write a plugin: `export default definePlugin({ setup(ctx) { ... } })`. */
export function definePlugin(def: PluginDefinition): PluginDefinition {
  return def;
}

export type { QueryContext, QueryResult };
