import type { DestinationStream, Logger as PinoLogger, pino as PinoFactory } from 'pino';
import type { Logger } from '../sdk/plugin.js';
import { requireOnFirstUse } from '../sdk/require-on-first-use.js';

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

/** What KernelLogger needs of its sink: pino's logger for the server, a plain writer for the CLI. */
export interface LogSink {
  child(bindings: Record<string, unknown>): LogSink;
  info(data: object, msg: string): void;
  warn(data: object, msg: string): void;
  error(data: object, msg: string): void;
  debug(data: object, msg: string): void;
}

/** pino, required when the first JSON sink is made: a CLI command (human lines) never loads it. */
const pinoPackage = requireOnFirstUse<{ pino: typeof PinoFactory }>(import.meta.url, 'pino');
const loadPino = () => pinoPackage().pino;

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** Error values as pino's serializer writes them (the human line shows the message, not `{}`). */
function plainValue(value: unknown): unknown {
  return value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value;
}

/**
 * The CLI's sink: `level [scope] message key=value` lines on stderr, the same text the JSON
 * sink's human mode printed, without loading pino (about a tenth of a command's start).
 */
class HumanSink implements LogSink {
  constructor(
    private readonly secretValues: () => string[],
    private readonly level: number,
    private readonly bindings: Record<string, unknown> = {},
  ) {}

  child(bindings: Record<string, unknown>): HumanSink {
    return new HumanSink(this.secretValues, this.level, { ...this.bindings, ...bindings });
  }

  private write(label: keyof typeof LEVELS, data: object, msg: string): void {
    if (LEVELS[label] < this.level || process.env.DP_LOG_SILENT === '1') return;
    const entry: Record<string, unknown> = { level: label, ...this.bindings };
    for (const [k, v] of Object.entries(data)) entry[k] = plainValue(v);
    entry.msg = msg;
    const line = humanLine(JSON.stringify(entry));
    process.stderr.write(redactSecrets(line, this.secretValues()));
  }

  info(data: object, msg: string): void {
    this.write('info', data, msg);
  }
  warn(data: object, msg: string): void {
    this.write('warn', data, msg);
  }
  error(data: object, msg: string): void {
    this.write('error', data, msg);
  }
  debug(data: object, msg: string): void {
    this.write('debug', data, msg);
  }
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
  const pino = loadPino();
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
  readonly pino: LogSink;
  /** The sink every scope shares (children bind their own `scope`, never a second one): pino's logger unless `human`. */
  readonly root: LogSink;
  private readonly secretValues: () => string[];

  constructor(scope: string, secretValues: () => string[], options: LogSinkOptions & { root?: LogSink } = {}) {
    const level = options.level ?? (process.env.DP_LOG_LEVEL === 'debug' ? 'debug' : 'info');
    this.root = options.root ?? (options.human ? new HumanSink(secretValues, LEVELS[level]) : createLogSink(secretValues, options));
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
