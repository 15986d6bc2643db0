/** Drains a connector read into memory (tests read small tables) and checks each batch's bound. */
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { DuckDatabase } from '../../../../kernel/database.js';
import type { ConnectorColumn, ConnectorReadRequest, ConnectorRuntime, ConnectorType } from '../../../../sdk/index.js';

/**
 * What the connectors plugin passes a type, for a type called directly: a real database port
 * (only its scratch() is used: the file itself is never opened) and paths taken as given.
 */
export const TEST_RUNTIME: ConnectorRuntime = {
  project: { resolve: (p: string) => path.resolve(p), resolveReadable: (p: string) => path.resolve(p) } as unknown as ConnectorRuntime['project'],
  db: new DuckDatabase(path.join(os.tmpdir(), 'dp-connectors-cloud-never-opened.duckdb')),
};

export interface ReadAll {
  columns: ConnectorColumn[];
  rows: unknown[][];
  batches: number;
  objects: Array<Record<string, unknown>>;
}

export async function readAll(type: ConnectorType, config: Record<string, unknown>, request: Omit<ConnectorReadRequest, 'signal'> & { signal?: AbortSignal }): Promise<ReadAll> {
  const rows: unknown[][] = [];
  let columns: ConnectorColumn[] = [];
  let batches = 0;
  for await (const batch of type.read(config, { signal: AbortSignal.timeout(60_000), runtime: TEST_RUNTIME, ...request })) {
    batches++;
    if (request.batchRows) assert.ok(batch.rows.length <= request.batchRows, `a batch of ${batch.rows.length} rows exceeds ${request.batchRows}`);
    assert.ok(batch.rows.length > 0 || (batches === 1 && rows.length === 0), 'an empty batch only as the one batch of an empty read');
    assert.ok(batch.columns.length > 0, 'every batch names its columns');
    for (const r of batch.rows) assert.equal(r.length, batch.columns.length);
    columns = batch.columns;
    rows.push(...batch.rows);
  }
  assert.ok(batches >= 1, 'a read yields at least one batch (the columns), even when empty');
  const objects = rows.map((r) => Object.fromEntries(columns.map((c, i) => [c.name, r[i]])));
  return { columns, rows, batches, objects };
}

/** A port nothing listens on (bound, then closed). */
export { freePort } from './postgres.js';
