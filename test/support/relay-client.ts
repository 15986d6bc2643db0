/**
 * The client side of the relay protocol of test/support/cli-batch.ts `--socket`: one connection
 * per run, the run as one JSON line, its `{ code, stdout, stderr }` back as one. Used by
 * test/helpers startDpRelay and by the stand-in executable test/support/dp-relay.ts (which must
 * stay small: it imports nothing else).
 */
import net from 'node:net';

export interface RelayedRun {
  args: string[];
  input?: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

export interface RelayedResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Sends one run to the `dp` process serving on `socketPath` and resolves with its result. */
export function relayRun(socketPath: string, run: RelayedRun): Promise<RelayedResult> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = net.connect(socketPath, () => socket.write(`${JSON.stringify(run)}\n`));
    socket.on('data', (d) => (answer += d.toString()));
    socket.once('error', reject);
    socket.once('end', () => {
      try {
        resolve(JSON.parse(answer) as RelayedResult);
      } catch (e) {
        reject(new Error(`the dp relay process gave no result for dp ${run.args.join(' ')} (${(e as Error).message})`));
      }
    });
  });
}
