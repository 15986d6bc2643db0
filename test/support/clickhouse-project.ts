/**
 * The project the ClickHouse target tests build: an environment on the 2-shard cluster (`prod`)
 * and one on a single server (`single`, the second node), two seeds and the staging view; each
 * test file adds its marts.
 */
import { makeProject } from '../helpers.js';
import type { RunningClickHouseCluster } from './clickhouse.js';

export function clickhouseTestProject(ch: RunningClickHouseCluster, files: Record<string, string>): string {
  return makeProject({
    'project.yml': `name: ch
database:
  path: control.duckdb
environments:
  prod:
    target:
      type: clickhouse
      url: ${ch.nodes[0]!.url}
      cluster: ${ch.cluster}
      database: shop
      user: default
      password: \${CH_PASSWORD}
  single:
    target:
      type: clickhouse
      url: ${ch.nodes[1]!.url}
      database: solo
      user: default
      password: \${CH_PASSWORD}
`,
    '.env': `CH_PASSWORD=${ch.password}\n`,
    'seeds/customers.csv': 'id,name,country\n1,Ann,FR\n2,Bob,DE\n3,Cid,FR\n4,Dee,\n',
    'seeds/orders.csv': 'id,customer_id,amount,status\n1,1,10.5,paid\n2,1,20,paid\n3,2,7,open\n4,3,1,paid\n5,9,3,paid\n',
    'transform/staging/stg_orders.sql': "-- @config materialized=view\nSELECT id, customer_id, CAST(amount AS DOUBLE) AS amount FROM seeds.orders WHERE status = 'paid'\n",
    ...files,
  });
}
