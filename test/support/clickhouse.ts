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
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
    // SIGKILL: the cluster and its folder are thrown away, so nothing is owed a clean shutdown. With
    // SIGTERM to all three at once a server waited for its ZooKeeper session (gone with ZooKeeper)
    // and the stop took 5.4 s; a kill takes a few milliseconds, at the end of each of six files.
    await Promise.all(children.map(async (c) => {
      await stopChild(c, 'SIGKILL');
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
      nodes.push({ httpPort: p.httpPort, tcpPort: p.tcpPort, url: `http://127.0.0.1:${p.httpPort}`, pid: child.pid! });
    }
    await Promise.all(nodes.map((n, i) => waitUntil(`clickhouse-server ${i + 1}`, children[i + 1]!, () => ping(n.httpPort), serverLogs[i]!)));
    return { nodes, cluster: 'dp_cluster', singleCluster: 'dp_single', user: 'default', password, zookeeperPort, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
