/** Drains a connector read into memory (tests read small tables) and checks each batch's bound. */
import assert from 'node:assert/strict';
import type { ConnectorColumn, ConnectorReadRequest, ConnectorType } from '../../../../sdk/index.js';

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
  for await (const batch of type.read(config, { signal: AbortSignal.timeout(60_000), ...request })) {
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
