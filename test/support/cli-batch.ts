/**
 * A `dp` process that runs several command lines one after the other, for test/helpers
 * runCliBatch: each through the binary's own entry (kernel/cli.ts main: its parsing, the relay
 * to a running server, what it prints and the exit code it sets), with its own stdin text,
 * environment and working folder. A test that compares twenty commands through a running server
 * pays one process start instead of twenty; the client and the server stay two processes.
 *
 * stdin: JSON `Array<{ args, input?, env?, cwd? }>`. stdout: JSON `Array<{ code, stdout, stderr }>`.
 *
 * With `--socket <path>` it serves runs instead, for test/helpers startDpRelay: each connection
 * sends one run as a JSON line and gets its `{ code, stdout, stderr }` back as one; runs take
 * turns. It prints `ready` once it listens and exits when its stdin closes.
 */
import net from 'node:net';
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

const realStdoutWrite = process.stdout.write.bind(process.stdout);
const realExit = process.exit.bind(process);
const stdinDescriptor = Object.getOwnPropertyDescriptor(process, 'stdin')!;
/** This process's own stdin (each run gets its input as `process.stdin` instead). */
const realStdin = process.stdin;
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

type Result = { code: number; stdout: string; stderr: string };

async function runOne(run: Run): Promise<Result> {
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
  const result = { code: current.exitCode ?? Number(process.exitCode ?? 0), stdout: current.stdout, stderr: current.stderr };
  current = null;
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  return result;
}

const socketAt = process.argv.indexOf('--socket');
if (socketAt < 0) {
  const chunks: Buffer[] = [];
  for await (const chunk of realStdin) chunks.push(chunk as Buffer);
  const runs = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Run[];
  const results: Result[] = [];
  for (const run of runs) results.push(await runOne(run));
  process.exitCode = 0;
  realStdoutWrite(JSON.stringify(results), () => realExit(0));
} else {
  let turn = Promise.resolve();
  const server = net.createServer((socket) => {
    let line = '';
    socket.on('error', () => {});
    socket.on('data', function onData(d) {
      line += d.toString();
      if (!line.includes('\n')) return;
      socket.removeListener('data', onData);
      const run = JSON.parse(line.slice(0, line.indexOf('\n'))) as Run;
      turn = turn.then(async () => {
        socket.end(`${JSON.stringify(await runOne(run))}\n`);
      });
    });
  });
  server.listen(process.argv[socketAt + 1]!, () => realStdoutWrite('ready\n'));
  // Its test ends it by closing its stdin (or by ending).
  realStdin.on('end', () => realExit(0));
  realStdin.resume();
}
