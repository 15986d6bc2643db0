import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { Logger } from '../sdk/plugin.js';

/**
 * Replaces every secret value (the project's .env values) in a log line with `***`, both as
 * written and as JSON escapes it (a value with a quote or backslash appears escaped in a JSON
 * line). Values shorter than 3 characters are left alone: they would blank out ordinary words.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 3) continue;
    out = out.split(secret).join('***');
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) out = out.split(escaped).join('***');
  }
  return out;
}

const HUMAN_SKIP = new Set(['level', 'time', 'scope', 'msg', 'pid', 'hostname']);

/** `warn [models] message key=value` for a terminal: the CLI's stderr stays readable. */
function humanLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const extra = Object.entries(entry)
    .filter(([k]) => !HUMAN_SKIP.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${entry.level} [${entry.scope ?? 'dp'}] ${entry.msg ?? ''}${extra ? ` ${extra}` : ''}\n`;
}

export interface LogSinkOptions {
  /** Human-readable lines (the CLI) instead of JSON lines (the server). */
  human?: boolean;
  level?: 'debug' | 'info';
}

/**
 * The process's one log sink: pino, writing through a stream that redacts secrets and honours
 * DP_LOG_SILENT at write time (tests switch it while running). It writes via
 * `process.stderr.write` looked up per line, so a test that captures stderr sees every line.
 */
export function createLogSink(secretValues: () => string[], options: LogSinkOptions = {}): PinoLogger {
  const destination: DestinationStream = {
    write(line: string) {
      if (process.env.DP_LOG_SILENT === '1') return;
      const redacted = redactSecrets(line, secretValues());
      process.stderr.write(options.human ? humanLine(redacted) : redacted);
    },
  };
  return pino(
    {
      level: options.level ?? (process.env.DP_LOG_LEVEL === 'debug' ? 'debug' : 'info'),
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Silenced lines are dropped before pino serialises them (tests log nothing at no cost).
      hooks: {
        logMethod(args, method) {
          if (process.env.DP_LOG_SILENT !== '1') method.apply(this, args);
        },
      },
    },
    destination,
  );
}

/** The Logger plugins see (`ctx.log`): a pino child per scope (the plugin's name). */
export class KernelLogger implements Logger {
  /** The pino logger behind this one; Fastify logs requests through a child of `root`. */
  readonly pino: PinoLogger;
  /** The sink every scope shares (children bind their own `scope`, never a second one). */
  readonly root: PinoLogger;
  private readonly secretValues: () => string[];

  constructor(scope: string, secretValues: () => string[], options: LogSinkOptions & { root?: PinoLogger } = {}) {
    this.root = options.root ?? createLogSink(secretValues, options);
    this.pino = this.root.child({ scope });
    this.secretValues = secretValues;
  }

  child(scope: string): KernelLogger {
    return new KernelLogger(scope, this.secretValues, { root: this.root });
  }

  redact(text: string): string {
    return redactSecrets(text, this.secretValues());
  }

  info(msg: string, data?: Record<string, unknown>): void {
    this.pino.info(data ?? {}, msg);
  }
  warn(msg: string, data?: Record<string, unknown>): void {
    this.pino.warn(data ?? {}, msg);
  }
  error(msg: string, data?: Record<string, unknown>): void {
    this.pino.error(data ?? {}, msg);
  }
  debug(msg: string, data?: Record<string, unknown>): void {
    this.pino.debug(data ?? {}, msg);
  }
}
