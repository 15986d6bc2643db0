/**
 * The `console` a script or notebook cell sees: every method writes through one function per
 * level, so a runner decides where a level's lines go (a run's output, stdout/stderr of a cell)
 * in one place. `trace` counts as `debug`; `table` and `dir` as `log`.
 */
import { format } from 'node:util';

export type ScriptConsoleLevel = 'log' | 'info' | 'warn' | 'error' | 'debug';

export function scriptConsole(writer: (level: ScriptConsoleLevel) => (...args: unknown[]) => void): Console {
  return Object.freeze({
    ...console,
    log: writer('log'),
    info: writer('info'),
    warn: writer('warn'),
    error: writer('error'),
    debug: writer('debug'),
    trace: writer('debug'),
    table: (data: unknown) => writer('log')(JSON.stringify(data)),
    dir: (data: unknown) => writer('log')(format('%o', data)),
  });
}

/** A console line as a run's output shows it: `log`/`info` as is, other levels tagged `[level] `. */
export function scriptConsoleLine(level: ScriptConsoleLevel, args: unknown[]): string {
  return level === 'log' || level === 'info' ? format(...args) : `[${level}] ${format(...args)}`;
}
