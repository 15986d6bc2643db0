/**
 * The ClickHouse target (issue 31) on a real local cluster (test/support/clickhouse.ts):
 * - scaling: a model of BENCH_CH_ROWS rows (default 10,000,000) and an aggregate over it, built
 *   by dp on one shard (the cluster `dp_single`) and on two (`dp_cluster`);
 * - dp's overhead: the same build against the very statements dp generates (materialize.ts),
 *   sent one by one by `clickhouse-client`, alternating rounds so load hits both sides alike.
 * Skipped (one row saying why) when the Debian packages are absent.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { App } from '../kernel/app.js';
import type { ModelsService } from '../sdk/index.js';
import { ClickHouseTarget } from '../plugins/target-clickhouse/client.js';
import { rebuildSteps, type TargetModel } from '../plugins/target-clickhouse/materialize.js';
import { transpileToClickHouse } from '../plugins/target-clickhouse/transpile.js';
import { CLICKHOUSE_CLIENT, clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../test/support/clickhouse.js';
import { clickhouseBenchProject, type BenchResult } from './util.js';

const ROWS = Number(process.env.BENCH_CH_ROWS ?? 10_000_000);
const BASE_SQL = `SELECT number AS id, number % 100 AS g, (number * 7) % 1000 AS v FROM system.numbers LIMIT ${ROWS}`;
const AGG_SQL = 'SELECT g, count(*) AS n, sum(v) AS s FROM bench.base GROUP BY g';

function project(ch: RunningClickHouseCluster): string {
  return clickhouseBenchProject(ch, 'dp-bench-ch-', { one: ch.singleCluster, two: ch.cluster }, {
    'bench/base.sql': `-- @config materialized=table, sharding_key=id\n${BASE_SQL}\n`,
    'bench/agg.sql': `-- @config materialized=table\n${AGG_SQL}\n`,
  });
}

async function dpBuild(root: string, env: string): Promise<number> {
  const app = await App.boot({ projectRoot: root, env, serving: false });
  await app.start();
  try {
    const t0 = performance.now();
    const summary = await app.services.get<ModelsService>('models').transform({});
    if (summary.status !== 'success') throw new Error(JSON.stringify(summary.results));
    return performance.now() - t0;
  } finally {
    await app.close();
  }
}

/**
 * The same build by clickhouse-client: dp's own statements (materialize.ts) for each model, one
 * process per statement. Generating them (transpile, DESCRIBE) is not timed: that is dp's
 * overhead, which the ratio shows.
 */
async function clientBuild(ch: RunningClickHouseCluster, target: ClickHouseTarget): Promise<number> {
  let elapsed = 0;
  const send = (q: string) => {
    const t0 = performance.now();
    const r = spawnSync(CLICKHOUSE_CLIENT, ['--host', '127.0.0.1', '--port', String(ch.nodes[0]!.tcpPort), '--password', ch.password, '--insert_distributed_sync', '1', '--join_use_nulls', '1', '--query', q], { encoding: 'utf8' });
    elapsed += performance.now() - t0;
    if (r.status !== 0) throw new Error(`clickhouse-client: ${r.stderr.split('\n')[0]}`);
  };
  send(`CREATE DATABASE IF NOT EXISTS bench ON CLUSTER ${ch.cluster}`);
  for (const [name, sql, shardingKey] of [['base', BASE_SQL, 'id'], ['agg', AGG_SQL, null]] as const) {
    const select = await transpileToClickHouse(sql, `bench.${name}`);
    const columns = await target.describe(select);
    const model: TargetModel = { model: `bench.${name}`, database: 'bench', name, materialized: 'table', strategy: 'append', uniqueKey: [], orderBy: null, shardingKey, select, filter: null, columns };
    for (const step of rebuildSteps(model, null, ch.cluster)) if ('sql' in step) send(step.sql);
  }
  return elapsed;
}

export default async function bench(): Promise<BenchResult[]> {
  const why = clickhouseUnavailable();
  if (why) return [{ name: `skipped: ${why}`, value: 0, unit: '' }];
  const ch = await startClickHouseCluster();
  const root = project(ch);
  const direct = await ClickHouseTarget.open({ type: 'clickhouse', url: ch.nodes[0]!.url, password: ch.password });
  try {
    const one: number[] = [];
    const two: number[] = [];
    const client: number[] = [];
    const rounds = Number(process.env.BENCH_CH_ROUNDS ?? 2);
    // Every build starts from an empty database: the one-shard and two-shard layouts share the servers.
    // (DROP DATABASE of a database that had tables fails on 18.16, 'Directory not empty': the tables go one by one.)
    const fresh = async () => {
      await direct.command(`CREATE DATABASE IF NOT EXISTS bench ON CLUSTER ${ch.cluster}`);
      for (const t of ['base', 'base__dp_local', 'agg', 'agg__dp_local']) await direct.command(`DROP TABLE IF EXISTS bench.${t} ON CLUSTER ${ch.cluster}`);
    };
    for (let i = 0; i < rounds; i++) {
      await fresh();
      one.push(await dpBuild(root, 'one'));
      await fresh();
      two.push(await dpBuild(root, 'two'));
      await fresh();
      client.push(await clientBuild(ch, direct));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(two) / median(client);
    return [
      { name: `dp transform, ${ROWS.toLocaleString('en')} rows + aggregate, 1 shard (median of ${rounds})`, value: median(one), unit: 'ms' },
      { name: `the same on 2 shards`, value: median(two), unit: 'ms' },
      { name: '2 shards: the same statements sent by clickhouse-client', value: median(client), unit: 'ms' },
      { name: "dp's build / clickhouse-client's (2 shards)", value: ratio, unit: 'x', target: '< 1.2', ok: ratio < 1.2 },
    ];
  } finally {
    await direct.close();
    await ch.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
