/**
 * A `dp` process that runs several command lines one after the other, for test/helpers
 * runCliBatch: each through the binary's own entry (kernel/cli.ts main: its parsing, the relay
 * to a running server, what it prints and the exit code it sets), with its own stdin text,
 * environment and working folder. A test that compares twenty commands through a running server
 * pays one process start instead of twenty; the client and the server stay two processes.
 *
 * stdin: JSON `Array<{ args, input?, env?, cwd? }>`. stdout: JSON `Array<{ code, stdout, stderr }>`.
 */
import { Readable } from 'node:stream';
import { main } from '../../kernel/cli.js';

interface Run {
  args: string[];
  input?: string;
  env?: Record<string, string>;
  cwd?: string;
}

/** What `process.exit` throws while a command runs: the process would have ended there. */
class ExitCalled extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`);
  }
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const runs = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Run[];

const realStdoutWrite = process.stdout.write.bind(process.stdout);
const realExit = process.exit.bind(process);
const stdinDescriptor = Object.getOwnPropertyDescriptor(process, 'stdin')!;
const startFolder = process.cwd();

/** What the running command printed; null between commands. Once it called process.exit, nothing more counts. */
let current: { stdout: string; stderr: string; exitCode: number | null } | null = null;

function capture(stream: 'stdout' | 'stderr', real: NodeJS.WriteStream['write']): NodeJS.WriteStream['write'] {
  return ((chunk: string | Uint8Array, encoding?: unknown, callback?: unknown) => {
    if (!current) return real(chunk as string, encoding as BufferEncoding, callback as () => void);
    if (current.exitCode === null) current[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') process.nextTick(done as () => void);
    return true;
  }) as NodeJS.WriteStream['write'];
}
process.stdout.write = capture('stdout', realStdoutWrite);
process.stderr.write = capture('stderr', process.stderr.write.bind(process.stderr));
process.exit = ((code?: number | string | null) => {
  if (!current) return realExit(code as number);
  current.exitCode ??= Number(code ?? process.exitCode ?? 0);
  throw new ExitCalled(current.exitCode);
}) as typeof process.exit;

const results: Array<{ code: number; stdout: string; stderr: string }> = [];
for (const run of runs) {
  const savedEnv = Object.fromEntries(Object.keys(run.env ?? {}).map((k) => [k, process.env[k]]));
  Object.assign(process.env, run.env ?? {});
  process.chdir(run.cwd ?? startFolder);
  Object.defineProperty(process, 'stdin', { configurable: true, enumerable: stdinDescriptor.enumerable, value: Readable.from([Buffer.from(run.input ?? '')]) });
  process.exitCode = undefined;
  current = { stdout: '', stderr: '', exitCode: null };
  try {
    await main(run.args);
  } catch (e) {
    // main reports its own failures; only an exit (or a bug of this driver) lands here.
    if (!(e instanceof ExitCalled)) current.stderr += `error: ${e instanceof Error ? e.message : String(e)}\n`;
    current.exitCode ??= 1;
  }
  const code = current.exitCode ?? Number(process.exitCode ?? 0);
  results.push({ code, stdout: current.stdout, stderr: current.stderr });
  current = null;
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}
process.exitCode = 0;
realStdoutWrite(JSON.stringify(results), () => realExit(0));
