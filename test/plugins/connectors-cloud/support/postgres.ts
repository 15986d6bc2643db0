/** The shared real PostgreSQL of the connector tests (test/support/databases.ts), with a query helper. */
import pg from 'pg';
import { freePort, startPostgres as startDatabase, type RunningDatabase } from '../../../support/databases.js';

export { freePort };

export interface RunningPostgres extends RunningDatabase {
  query(sql: string, params?: unknown[]): Promise<pg.QueryResult>;
}

export async function startPostgres(): Promise<RunningPostgres> {
  const db = await startDatabase();
  const config = { host: db.host, port: db.port, user: db.user, password: db.password, database: db.database };
  return Object.assign(db, {
    async query(sql: string, params?: unknown[]) {
      const client = new pg.Client(config);
      await client.connect();
      try {
        return await client.query(sql, params);
      } finally {
        await client.end();
      }
    },
  });
}
