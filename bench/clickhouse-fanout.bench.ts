/**
 * Independent models on a ClickHouse cluster (test/support/clickhouse.ts, two shards): one source
 * table and BENCH_FANOUT_MODELS (default 12) small tables that read only it, rebuilt by
 * `dp transform --force` with one model at a time (the build before models went side by side:
 * the baseline) and with the default of four, alternating rounds (BENCH_CH_ROUNDS, default 3) so
 * load hits both alike. On small models the time is the cluster's DDL queue (each `ON CLUSTER`
 * statement waits for every host), which side-by-side builds overlap.
 * Skipped (one row saying why) when the Debian packages are absent.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { App } from '../kernel/app.js';
import type { ModelsService } from '../sdk/index.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../test/support/clickhouse.js';
import { clickhouseBenchProject, type BenchResult } from './util.js';

const MODELS = Number(process.env.BENCH_FANOUT_MODELS ?? 12);

function project(ch: RunningClickHouseCluster): string {
  const models: Record<string, string> = { 'fan/src.sql': '-- @config materialized=table, sharding_key=id\nSELECT number AS id, number % 10 AS g FROM system.numbers LIMIT 1000\n' };
  for (let i = 0; i < MODELS; i++) models[`fan/m${i}.sql`] = `-- @config materialized=table\nSELECT g, count(*) AS n, ${i} AS k FROM fan.src GROUP BY g\n`;
  return clickhouseBenchProject(ch, 'dp-bench-ch-fanout-', { cluster: ch.cluster }, models);
}

export default async function bench(): Promise<BenchResult[]> {
  const why = clickhouseUnavailable();
  if (why) return [{ name: `skipped: ${why}`, value: 0, unit: '' }];
  const ch = await startClickHouseCluster();
  const root = project(ch);
  const app = await App.boot({ projectRoot: root, env: 'cluster', serving: false });
  try {
    await app.start();
    const models = app.services.get<ModelsService>('models');
    const build = async (concurrency: number | undefined): Promise<number> => {
      const t0 = performance.now();
      const summary = await models.transform({ force: true, concurrency });
      if (summary.status !== 'success') throw new Error(JSON.stringify(summary.results));
      return performance.now() - t0;
    };
    // The first build creates the databases and tables: not timed.
    await build(undefined);
    const oneAtATime: number[] = [];
    const sideBySide: number[] = [];
    const rounds = Number(process.env.BENCH_CH_ROUNDS ?? 3);
    for (let i = 0; i < rounds; i++) {
      oneAtATime.push(await build(1));
      sideBySide.push(await build(undefined));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(sideBySide) / median(oneAtATime);
    return [
      { name: `dp transform --force, 1 + ${MODELS} small tables on 2 shards, one model at a time (median of ${rounds})`, value: median(oneAtATime), unit: 'ms' },
      { name: 'the same, up to 4 side by side (the default)', value: median(sideBySide), unit: 'ms' },
      { name: 'side by side / one at a time', value: ratio, unit: 'x', target: '< 0.6', ok: ratio < 0.6 },
    ];
  } finally {
    await app.close();
    await ch.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
