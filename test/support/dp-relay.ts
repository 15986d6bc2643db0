/**
 * A stand-in for the `dp` executable in a script under test (test/helpers startDpRelay): it sends
 * its command line, working folder and environment to the `dp` process serving runs on
 * DP_TEST_RELAY_SOCKET (test/support/cli-batch.ts --socket), prints what the command printed and
 * exits with its code. A script that runs dp a dozen times pays one kernel boot, not a dozen;
 * the script and dp stay two processes. Its stdin is not passed on (the command reads none).
 */
import { relayRun } from './relay-client.js';

const { DP_TEST_RELAY_SOCKET: socketPath, ...env } = process.env;
relayRun(socketPath!, { args: process.argv.slice(2), cwd: process.cwd(), env }).then(
  (result) => {
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    process.exitCode = result.code;
  },
  (e: Error) => {
    process.stderr.write(`dp relay: ${e.message}\n`);
    process.exitCode = 2;
  },
);
