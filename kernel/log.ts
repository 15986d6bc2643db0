import type { Logger } from '../sdk/plugin.js';

/**
 * A small structured logger. Every line passes through `redact`, which replaces the value
 * of every secret the project holds (.env values), so no secret reaches a log.
 */
export class KernelLogger implements Logger {
  constructor(
    private readonly scope: string,
    private readonly secretValues: () => string[],
    private readonly sink: (line: string) => void = (line) => process.stderr.write(line + '\n'),
    private readonly level: 'debug' | 'info' = process.env.DP_LOG_LEVEL === 'debug' ? 'debug' : 'info',
  ) {}

  child(scope: string): KernelLogger {
    return new KernelLogger(scope, this.secretValues, this.sink, this.level);
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.secretValues()) {
      if (secret && secret.length >= 3) out = out.split(secret).join('***');
    }
    return out;
  }

  private write(level: string, msg: string, data?: Record<string, unknown>): void {
    if (process.env.DP_LOG_SILENT === '1') return;
    const line = JSON.stringify({ time: new Date().toISOString(), level, scope: this.scope, msg, ...(data ?? {}) });
    this.sink(this.redact(line));
  }

  info(msg: string, data?: Record<string, unknown>): void {
    this.write('info', msg, data);
  }
  warn(msg: string, data?: Record<string, unknown>): void {
    this.write('warn', msg, data);
  }
  error(msg: string, data?: Record<string, unknown>): void {
    this.write('error', msg, data);
  }
  debug(msg: string, data?: Record<string, unknown>): void {
    if (this.level === 'debug') this.write('debug', msg, data);
  }
}
