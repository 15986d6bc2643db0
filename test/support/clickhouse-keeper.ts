/**
 * The keeper of one ClickHouse cluster shared by the test files of a suite run
 * (`leaseClickHouseCluster` in test/support/clickhouse.ts starts it, detached): it starts the
 * cluster, prints `ready <socket>` and lends the cluster to one file at a time over a Unix
 * socket. A file holds it while its connection is open (its process ending closes it too); then
 * the keeper resets the cluster (queries ended, databases dropped, query log emptied) before the
 * next file gets it. A file asking while it is lent gets `busy` and starts another keeper, so
 * files running at once never share a cluster. The first file served is the one that started the
 * keeper (it presents the token it passed). The keeper stops the cluster and exits when the test
 * runner (argv[2], the files' parent process) is gone, or when nobody held the cluster for a
 * minute; its CPU and the cluster's go to `dp-test-clickhouse/keepers.log` under the OS temp dir.
 *
 * Usage: node clickhouse-keeper.js <runner pid> <token>
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { resetClickHouseCluster, startClickHouseCluster, type LentCluster, type RunningClickHouseCluster } from './clickhouse.js';

const runnerPid = Number(process.argv[2]);
const token = process.argv[3] ?? '';
let reservedFor: string | null = token;
const IDLE_MS = 60_000;
const base = path.join(os.tmpdir(), 'dp-test-clickhouse');
const folder = path.join(base, String(runnerPid));
const socketPath = path.join(folder, `${process.pid}.sock`);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

// What keepers of runs that ended without them (killed) left behind.
for (const entry of fs.existsSync(base) ? fs.readdirSync(base) : []) {
  if (/^\d+$/.test(entry) && !alive(Number(entry))) fs.rmSync(path.join(base, entry), { recursive: true, force: true });
}

let cluster: RunningClickHouseCluster;
try {
  cluster = await startClickHouseCluster();
} catch (e) {
  process.stdout.write(`failed ${(e as Error).message.replace(/\n/g, ' ')}\n`);
  process.exit(1);
}

let state: 'free' | 'lent' | 'resetting' = 'free';
let leases = 0;
const waiting: net.Socket[] = [];
let idleTimer: NodeJS.Timeout | null = null;
let stopping = false;

async function shutdown(why: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  server.close();
  fs.rmSync(socketPath, { force: true });
  await cluster.stop();
  // Its log (stderr, from the file that started it) is kept only when it says something.
  const log = path.join(folder, `keeper-${token}.log`);
  if (fs.existsSync(log) && fs.statSync(log).size === 0) fs.rmSync(log);
  // Once the run is over no file of it can be starting a keeper here.
  if (!alive(runnerPid) && fs.readdirSync(folder).length === 0) fs.rmSync(folder, { recursive: true, force: true });
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  // utime, stime, cutime, cstime (fields 14-17) in clock ticks: this process and its waited-for children, the cluster.
  const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, 15).map(Number);
  const cpu = ticks.reduce((a, b) => a + b, 0) / 100;
  fs.appendFileSync(path.join(base, 'keepers.log'), `${new Date().toISOString()} keeper ${process.pid} of runner ${runnerPid}: ${leases} leases, ${cpu.toFixed(1)} s CPU with its cluster; stopped: ${why}\n`);
  process.exit(0);
}

function armIdle(): void {
  idleTimer = setTimeout(() => void shutdown('unused for a minute'), IDLE_MS);
}

function lend(socket: net.Socket): void {
  if (idleTimer) clearTimeout(idleTimer);
  state = 'lent';
  reservedFor = null;
  leases++;
  const lent: LentCluster = { nodes: cluster.nodes, password: cluster.password, zookeeperPort: cluster.zookeeperPort };
  socket.write(`${JSON.stringify(lent)}\n`);
  socket.once('close', () => void giveBack());
}

async function giveBack(): Promise<void> {
  state = 'resetting';
  try {
    await resetClickHouseCluster(cluster);
  } catch (e) {
    process.stderr.write(`reset failed: ${(e as Error).message}\n`);
    return shutdown('a reset failed');
  }
  state = 'free';
  let next: net.Socket | undefined;
  while ((next = waiting.shift()) && next.destroyed);
  if (next) lend(next);
  else armIdle();
}

const server = net.createServer((socket) => {
  socket.on('error', () => {});
  let line = '';
  const onData = (d: Buffer) => {
    line += d.toString();
    if (!line.includes('\n')) return;
    socket.removeListener('data', onData);
    const token = line.slice(0, line.indexOf('\n'));
    if (stopping || state === 'lent' || (reservedFor !== null && token !== reservedFor)) socket.end('busy\n');
    // Free in a moment: waiting beats starting a cluster.
    else if (state === 'resetting') waiting.push(socket);
    else lend(socket);
  };
  socket.on('data', onData);
});

fs.mkdirSync(folder, { recursive: true });
await new Promise<void>((resolve) => server.listen(socketPath, resolve));
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));
setInterval(() => {
  if (!alive(runnerPid)) void shutdown('the test runner exited');
}, 1000);
armIdle();
process.stdout.write(`ready ${socketPath}\n`);
