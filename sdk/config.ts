/** project.yml after environment overlay and ${VAR} expansion (SPEC.md "Project configuration"). */
export interface StreamStep {
  action: 'ingest' | 'seed' | 'transform' | 'export';
  targets: string[];
}

export interface StreamConfig {
  description: string;
  schedule: string | null;
  retries: number;
  retry_delay: number;
  webhook_url: string | null;
  steps: StreamStep[];
}

export interface SourceTable {
  name: string;
  description?: string;
  loaded_at_column?: string;
  columns?: Array<{ name: string; description?: string }>;
}

export interface SourceConfig {
  name: string;
  schema: string;
  description?: string;
  connection?: string;
  freshness_hours?: number;
  tables: SourceTable[];
}

export interface ExposureConfig {
  name: string;
  description?: string;
  owner?: string;
  type?: string;
  url?: string;
  depends_on: string[];
}

export interface AlertsConfig {
  channels: Array<'chat' | 'webhook' | 'log'>;
  chat_webhook_url?: string;
  webhook_url?: string;
  on_success: boolean;
  on_failure: boolean;
}

export interface ProjectConfig {
  name: string;
  database: { path: string };
  connections: Record<string, Record<string, unknown>>;
  streams: Record<string, StreamConfig>;
  lint: { dialect: string; rules: string[] | 'all'; [k: string]: unknown };
  sources: SourceConfig[];
  exposures: ExposureConfig[];
  environments: Record<string, { database?: { path?: string } }>;
  alerts: AlertsConfig;
  connectors: Record<string, Record<string, unknown>>;
  quality: { anomaly_detection: { enabled: boolean; lookback: number; threshold: number; notify: string[] }; [k: string]: unknown };
  plugins: { disable: string[]; paths: string[] };
  query: {
    timeout_seconds: { admin: number; editor: number; viewer: number };
    default_limit: number;
    max_limit: number;
    /** User queries of each role that run at once; the rest wait, their timeout running. */
    max_concurrent: { admin: number; editor: number; viewer: number };
    /** Queries of one role that may wait for a slot; more are answered 503 `query_queue_full`. */
    max_queued: number;
  };
  /** Everything as written (after expansion), for plugin-specific keys (e.g. `masking:`). */
  raw: Record<string, unknown>;
}

export interface ProjectInfo {
  /** Absolute project root. */
  readonly root: string;
  /** Active environment name, or null. */
  readonly env: string | null;
  readonly config: ProjectConfig;
  /**
   * Resolves a project-relative path and refuses (DpError 400 `path_outside_project`) anything that
   * escapes the root: `..`, absolute paths, or symlinks pointing outside.
   */
  resolve(relativePath: string): string;
  /** Project-relative form of an absolute path inside the project (forward slashes). */
  relative(absolutePath: string): string;
  /**
   * Writes a project file atomically (temp file in the same folder, then rename), creating its
   * folder; refuses paths outside the project like `resolve`. Returns the absolute path.
   */
  writeFile(relativePath: string, content: string | Buffer): string;
}
