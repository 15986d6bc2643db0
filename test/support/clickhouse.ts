/**
 * A real ClickHouse cluster for the ClickHouse target's tests and benchmarks: one ZooKeeper and two
 * `clickhouse-server` processes (Debian's 18.16) on 127.0.0.1 and free ports, each in its own
 * temporary folder, declared to each other as the 2-shard cluster `dp_cluster` in `remote_servers`
 * (and a 1-shard `dp_single` for the scaling benchmark). `stop()` ends the three processes by PID
 * and removes the folders. Never the system services. `scripts/setup-system.sh` installs the
 * packages (clickhouse-server, clickhouse-client, zookeeper).
 *
 * The machine is shared: the servers run with small caches, one thread per query and a small
 * background pool; ZooKeeper gets a 64 MB heap.
 *
 * Test files take a cluster with `leaseClickHouseCluster()`: the files of one suite run share
 * clusters, one file at a time each (a keeper process per cluster, test/support/clickhouse-keeper.ts),
 * so a run starts as many as files ran at once instead of one per file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, stopChild } from './databases.js';

export const CLICKHOUSE_SERVER = '/usr/sbin/clickhouse-server';
export const CLICKHOUSE_CLIENT = '/usr/bin/clickhouse-client';
export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';

/** Why the cluster cannot start here (a binary missing), or undefined when it can. */
export function clickhouseUnavailable(): string | undefined {
  for (const f of [CLICKHOUSE_SERVER, CLICKHOUSE_CLIENT, ZOOKEEPER_JAR, '/usr/bin/java']) {
    if (!fs.existsSync(f)) return `${f} is missing (scripts/setup-system.sh installs clickhouse-server, clickhouse-client and zookeeper)`;
  }
  return undefined;
}

export interface ClickHouseNode {
  httpPort: number;
  tcpPort: number;
  /** The HTTP interface, as `environments.<name>.target.url` takes it. */
  url: string;
  pid: number;
  /** Its folder (config, logs, and `data/` under the server's path). */
  folder: string;
}

export interface RunningClickHouseCluster {
  /** The two servers; nodes[0] is the one a target's url names. */
  nodes: ClickHouseNode[];
  /** The 2-shard cluster in both servers' remote_servers. */
  cluster: 'dp_cluster';
  /** A cluster of nodes[0] alone (the scaling benchmark's one shard). */
  singleCluster: 'dp_single';
  user: 'default';
  password: string;
  zookeeperPort: number;
  /** Ends ZooKeeper and both servers by PID and removes their folders. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/** Polls `probe` until it answers true, failing when the child exits or the deadline passes. */
async function waitUntil(what: string, child: ChildProcess, probe: () => Promise<boolean>, logFile: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '';
      throw new Error(`${what} exited before it was ready\n${tail}`);
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms`);
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function serverConfig(dir: string, node: { httpPort: number; tcpPort: number; interserverPort: number; shard: number }, peers: { tcpPort: number }[], zkPort: number, password: string): string {
  // Distributed tables and ON CLUSTER reach the other nodes as this user.
  const shard = (p: { tcpPort: number }) =>
    `<shard><replica><host>127.0.0.1</host><port>${p.tcpPort}</port><user>default</user><password>${xmlEscape(password)}</password></replica></shard>`;
  return `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${node.httpPort}</http_port>
  <tcp_port>${node.tcpPort}</tcp_port>
  <interserver_http_port>${node.interserverPort}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <max_connections>256</max_connections>
  <keep_alive_timeout>3</keep_alive_timeout>
  <max_concurrent_queries>32</max_concurrent_queries>
  <uncompressed_cache_size>16777216</uncompressed_cache_size>
  <mark_cache_size>16777216</mark_cache_size>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  <remote_servers>
    <dp_cluster>${peers.map(shard).join('')}</dp_cluster>
    <dp_single>${shard(peers[0]!)}</dp_single>
  </remote_servers>
  <zookeeper><node><host>127.0.0.1</host><port>${zkPort}</port></node><session_timeout_ms>30000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>${String(node.shard).padStart(2, '0')}</shard><replica>r1</replica></macros>
  <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
  <query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>7500</flush_interval_milliseconds></query_log>
  <max_session_timeout>3600</max_session_timeout>
  <default_session_timeout>60</default_session_timeout>
</yandex>
`;
}

function usersConfig(password: string): string {
  return `<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>2000000000</max_memory_usage>
      <max_threads>2</max_threads>
      <background_pool_size>2</background_pool_size>
      <background_schedule_pool_size>2</background_schedule_pool_size>
      <load_balancing>in_order</load_balancing>
      <log_queries>1</log_queries>
    </default>
  </profiles>
  <users>
    <default>
      <password>${xmlEscape(password)}</password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;
}

async function ping(httpPort: number): Promise<boolean> {
  // Bounded: a server that accepted the connection while starting may never answer it.
  const res = await fetch(`http://127.0.0.1:${httpPort}/ping`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  return res.ok;
}

/** One readiness probe's limit; waitUntil retries until its own deadline. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * ZooKeeper serves once `srvr` (the one four-letter command allowed by default) reports its mode:
 * an open port alone is not enough, and ClickHouse 18.16 crashes in its DDL worker when its first
 * ZooKeeper sessions fail, so the servers start only after this answers.
 */
async function zookeeperServing(port: number): Promise<boolean> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    let text = '';
    const s = net.connect(port, '127.0.0.1', () => s.write('srvr'));
    // A ZooKeeper still starting can take the connection and neither answer nor close it (seen
    // in a CI run: the probe hung for good): each probe gives up after PROBE_TIMEOUT_MS.
    s.setTimeout(PROBE_TIMEOUT_MS, () => s.destroy());
    s.on('data', (d) => {
      text += d.toString();
      if (/Mode: standalone/.test(text)) s.destroy();
    });
    s.once('close', () => resolve(/Mode: standalone/.test(text)));
    s.once('error', () => resolve(false));
  });
}

/** Starts ZooKeeper and two ClickHouse servers forming `dp_cluster`; resolves when every one answers. */
export async function startClickHouseCluster(options: { password?: string } = {}): Promise<RunningClickHouseCluster> {
  const why = clickhouseUnavailable();
  if (why) throw new Error(why);
  const password = options.password ?? 'ch-test-secret';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-ch-'));
  const children: ChildProcess[] = [];
  const stopAll = async () => {
    await Promise.all(children.map(async (c) => {
      await stopChild(c, 'SIGTERM');
      running.delete(c);
    }));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    // ZooKeeper: standalone, in its own folder, 4-letter words and the admin server off.
    const zkDir = path.join(dir, 'zookeeper');
    fs.mkdirSync(path.join(zkDir, 'data'), { recursive: true });
    const zookeeperPort = await freePort();
    fs.writeFileSync(
      path.join(zkDir, 'zoo.cfg'),
      `tickTime=2000\ndataDir=${zkDir}/data\nclientPort=${zookeeperPort}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n`,
    );
    const zkLog = path.join(zkDir, 'out.log');
    const zk = spawn(
      '/usr/bin/java',
      ['-Xmx64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xss512k', '-cp', `/etc/zookeeper/conf:${ZOOKEEPER_JAR}`,
        `-Dzookeeper.log.dir=${zkDir}`, 'org.apache.zookeeper.server.ZooKeeperServerMain', path.join(zkDir, 'zoo.cfg')],
      { stdio: ['ignore', fs.openSync(zkLog, 'a'), fs.openSync(zkLog, 'a')] },
    );
    children.push(zk);
    running.add(zk);
    await waitUntil('zookeeper', zk, () => zookeeperServing(zookeeperPort), zkLog);
    const ports = [];
    for (let i = 0; i < 2; i++) ports.push({ httpPort: await freePort(), tcpPort: await freePort(), interserverPort: await freePort(), shard: i + 1 });
    const nodes: ClickHouseNode[] = [];
    const serverLogs: string[] = [];
    for (const p of ports) {
      const nodeDir = path.join(dir, `node${p.shard}`);
      for (const sub of ['data', 'tmp', 'user_files', 'format_schemas']) fs.mkdirSync(path.join(nodeDir, sub), { recursive: true });
      fs.writeFileSync(path.join(nodeDir, 'users.xml'), usersConfig(password));
      fs.writeFileSync(path.join(nodeDir, 'config.xml'), serverConfig(nodeDir, p, ports, zookeeperPort, password));
      const log = path.join(nodeDir, 'stdout.log');
      serverLogs.push(path.join(nodeDir, 'server.err.log'));
      const child = spawn(CLICKHOUSE_SERVER, [`--config-file=${path.join(nodeDir, 'config.xml')}`], {
        cwd: nodeDir,
        stdio: ['ignore', fs.openSync(log, 'a'), fs.openSync(log, 'a')],
      });
      children.push(child);
      running.add(child);
      nodes.push({ httpPort: p.httpPort, tcpPort: p.tcpPort, url: `http://127.0.0.1:${p.httpPort}`, pid: child.pid!, folder: nodeDir });
    }
    await Promise.all(nodes.map((n, i) => waitUntil(`clickhouse-server ${i + 1}`, children[i + 1]!, () => ping(n.httpPort), serverLogs[i]!)));
    return { nodes, cluster: 'dp_cluster', singleCluster: 'dp_single', user: 'default', password, zookeeperPort, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** The SQL `resetClickHouseCluster` sends, over the HTTP interface, as the test user, unlogged. */
async function clickhouseSql(ch: RunningClickHouseCluster, node: ClickHouseNode, sql: string): Promise<string> {
  // log_queries=0: the query log a test reads holds only the queries of its own file.
  const params = new URLSearchParams({ user: ch.user, password: ch.password, log_queries: '0', query_id: `dp_test_reset_${crypto.randomUUID()}` });
  const res = await fetch(`${node.url}/?${params}`, { method: 'POST', body: sql, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${sql}: ${text.slice(0, 500)}`);
  return text;
}

/**
 * Makes a cluster a test file used as a started one is: each server's queries ended, every
 * database but `system` and `default` dropped (and `default`'s tables), the query log emptied.
 */
export async function resetClickHouseCluster(ch: RunningClickHouseCluster): Promise<void> {
  await Promise.all(ch.nodes.map(async (node) => {
    await clickhouseSql(ch, node, "KILL QUERY WHERE query_id NOT LIKE 'dp_test_reset_%' ASYNC");
    const list = async (sql: string) => (await clickhouseSql(ch, node, `${sql} FORMAT TabSeparated`)).split('\n').filter(Boolean);
    const quote = (name: string) => `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
    for (const db of await list("SELECT name FROM system.databases WHERE name NOT IN ('system', 'default')")) {
      const drop = () => clickhouseSql(ch, node, `DROP DATABASE IF EXISTS ${quote(db)}`);
      await drop().catch(async (e: Error) => {
        // 18.16 leaves folders of dropped tables (a Distributed table's queue) in the database's
        // data folder, then cannot remove it: emptied here, the drop is tried again.
        if (!/Directory not empty/.test(e.message)) throw e;
        const data = path.join(node.folder, 'data', 'data', db);
        for (const entry of fs.readdirSync(data)) fs.rmSync(path.join(data, entry), { recursive: true, force: true });
        await drop();
      });
    }
    for (const table of await list("SELECT name FROM system.tables WHERE database = 'default'")) await clickhouseSql(ch, node, `DROP TABLE IF EXISTS default.${quote(table)}`);
    // What the last file's queries left in the log's buffer is written first, then emptied with the rest.
    await clickhouseSql(ch, node, 'SYSTEM FLUSH LOGS');
    await clickhouseSql(ch, node, 'TRUNCATE TABLE IF EXISTS system.query_log');
  }));
}

/** The folder of the keepers of this suite run (the test runner is this file's parent process). */
function keepersFolder(): string {
  return path.join(os.tmpdir(), 'dp-test-clickhouse', String(process.ppid));
}

const KEEPER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'clickhouse-keeper.js');

/** What a keeper sends a file it lends its cluster to. */
export interface LentCluster {
  nodes: ClickHouseNode[];
  password: string;
  zookeeperPort: number;
}

/**
 * Asks the keeper listening on `socketPath` for its cluster (`token`: the one its starter got).
 * Resolves with the lease (the connection stays open while the file holds it) or null when the
 * keeper lends it to another file or is gone.
 */
function askKeeper(socketPath: string, token: string): Promise<{ lent: LentCluster; socket: net.Socket } | null> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(socketPath);
    const fail = () => {
      socket.destroy();
      resolve(null);
    };
    socket.once('error', (e: Error) => {
      // A keeper killed before it removed its socket.
      if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') fs.rmSync(socketPath, { force: true });
      fail();
    });
    socket.once('close', fail);
    socket.on('data', (d) => {
      answer += d.toString();
      const end = answer.indexOf('\n');
      if (end < 0) return;
      const line = answer.slice(0, end);
      if (line === 'busy') return fail();
      socket.removeAllListeners('data');
      socket.removeListener('close', fail);
      socket.on('error', () => {});
      // The lease must not keep the test file's process alive.
      socket.unref();
      resolve({ lent: JSON.parse(line) as LentCluster, socket });
    });
    socket.write(`${token}\n`);
  });
}

/** Starts a keeper of a new cluster for this suite run; resolves with its socket's path and the token it lends to first. */
async function startKeeper(folder: string): Promise<{ socketPath: string; token: string }> {
  const token = crypto.randomUUID();
  const log = fs.openSync(path.join(folder, `keeper-${token}.log`), 'a');
  const child = spawn(process.execPath, [KEEPER_SCRIPT, String(process.ppid), token], { detached: true, stdio: ['ignore', 'pipe', log] });
  fs.closeSync(log);
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    child.once('exit', (code, signal) => reject(new Error(`the ClickHouse keeper exited (${code ?? signal}) before its cluster was ready: ${out}${fs.readFileSync(path.join(folder, `keeper-${token}.log`), 'utf8').slice(-2000)}`)));
  });
  child.stdout!.destroy();
  child.removeAllListeners('exit');
  child.unref();
  const ready = /^ready (.+)$/.exec(line);
  if (!ready) throw new Error(`the ClickHouse keeper could not start its cluster: ${line}`);
  return { socketPath: ready[1]!, token };
}

/**
 * A cluster for one test file: a free one of this suite run (reset to a started one's state when
 * its last file let it go), else a new one, started by a keeper process that keeps it for the
 * run's later files and stops it when the test runner exits or after a minute unused. `stop()`
 * gives it back (so does the file's exit). Files running at once never share one.
 */
export async function leaseClickHouseCluster(): Promise<RunningClickHouseCluster> {
  const why = clickhouseUnavailable();
  if (why) throw new Error(why);
  const folder = keepersFolder();
  fs.mkdirSync(folder, { recursive: true });
  let lease: { lent: LentCluster; socket: net.Socket } | null = null;
  for (const entry of fs.readdirSync(folder).filter((n) => n.endsWith('.sock'))) {
    lease = await askKeeper(path.join(folder, entry), '');
    if (lease) break;
  }
  if (!lease) {
    // Every cluster of the run is lent (or there is none yet): a new keeper lends its own to this file first.
    const keeper = await startKeeper(folder);
    lease = await askKeeper(keeper.socketPath, keeper.token);
    if (!lease) throw new Error('the ClickHouse keeper this file started did not lend it its cluster');
  }
  const { lent, socket } = lease;
  return {
    nodes: lent.nodes,
    cluster: 'dp_cluster',
    singleCluster: 'dp_single',
    user: 'default',
    password: lent.password,
    zookeeperPort: lent.zookeeperPort,
    async stop() {
      if (socket.destroyed) return;
      // Held open until the keeper closes its end: the file's last hook waits for it.
      socket.ref();
      await new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.end();
      });
    },
  };
}
