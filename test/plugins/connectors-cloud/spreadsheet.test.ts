/**
 * Issue 15: spreadsheet. An .xlsx workbook written by exceljs (a table per sheet, header row,
 * typed cells, formulas, rich text) read through the streaming reader; and a CSV-export URL
 * served by a local HTTP server, downloaded and read by DuckDB's CSV reader.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import ExcelJS from 'exceljs';
import { spreadsheetType } from '../../../plugins/connectors-cloud/spreadsheet.js';
import { freePort, readAll, TEST_RUNTIME } from './support/read.js';
import { tempDir } from '../../helpers.js';

describe('spreadsheet', () => {
  let dir: string;
  let xlsx: string;
  let server: http.Server;
  let url: string;
  before(async () => {
    dir = tempDir('dp-cc-xlsx-');
    xlsx = path.join(dir, 'budget.xlsx');
    const wb = new ExcelJS.Workbook();
    const orders = wb.addWorksheet('Orders');
    orders.addRow(['id', 'customer', 'amount', 'ordered_on', 'paid', 'total']);
    for (let i = 1; i <= 2500; i++) {
      const row = orders.addRow([i, i === 2 ? { richText: [{ text: 'Bo' }, { text: 'b' }] } : `c${i}`, i * 1.5, new Date(Date.UTC(2024, 0, 1 + (i % 28))), i % 2 === 0, null]);
      row.getCell(6).value = { formula: `C${i + 1}*2`, result: i * 3 };
    }
    const notes = wb.addWorksheet('Notes');
    notes.addRow(['Quarterly notes']);
    notes.addRow([]);
    notes.addRow(['topic', 'owner', null, 'due']);
    notes.addRow(['hiring', 'ann', 'x', 'soon']);
    notes.addRow(['budget', null, null, null]);
    await wb.xlsx.writeFile(xlsx);
    server = http.createServer((req, res) => {
      if (req.headers.authorization !== 'Bearer sheet-token') return void (res.writeHead(403), res.end('forbidden'));
      res.writeHead(200, { 'content-type': 'text/csv', 'last-modified': 'Wed, 01 May 2024 08:00:00 GMT' });
      res.end('region,revenue,day\nnorth,1200.50,2024-05-01\nsouth,980.00,2024-05-02\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/export?format=csv`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tests a workbook and lists its sheets', async () => {
    assert.deepEqual(await spreadsheetType.testConnection({ path: xlsx }, AbortSignal.timeout(10_000)), { ok: true, message: 'workbook with 2 sheets: Orders, Notes' });
    const missing = await spreadsheetType.testConnection({ path: path.join(dir, 'nope.xlsx') }, AbortSignal.timeout(10_000));
    assert.equal(missing.ok, false);
    assert.match(missing.message, /^path: no such file/);
  });

  it('discovers each sheet with column types inferred from its cells', async () => {
    const tables = await spreadsheetType.discover({ path: xlsx }, AbortSignal.timeout(10_000));
    assert.deepEqual(tables.map((t) => t.name), ['Orders', 'Notes']);
    assert.deepEqual(tables[0]!.columns, [
      { name: 'id', type: 'BIGINT' },
      { name: 'customer', type: 'VARCHAR' },
      { name: 'amount', type: 'DOUBLE' },
      { name: 'ordered_on', type: 'TIMESTAMP' },
      { name: 'paid', type: 'BOOLEAN' },
      { name: 'total', type: 'BIGINT' },
    ]);
  });

  it('reads a sheet row by row in bounded batches: formulas give results, rich text its text', async () => {
    const r = await readAll(spreadsheetType, { path: xlsx }, { table: 'Orders', batchRows: 1000 });
    assert.equal(r.rows.length, 2500);
    assert.equal(r.batches, 3);
    assert.deepEqual(r.rows[1]!.slice(0, 3), [2, 'Bob', 3]);
    assert.equal((r.rows[0]![3] as Date).toISOString(), '2024-01-02T00:00:00.000Z');
    assert.equal(r.rows[9]![5], 30);
  });

  it('header_row: names come from that row; blank names get a position name', async () => {
    const r = await readAll(spreadsheetType, { path: xlsx, header_row: 3 }, { table: 'Notes' });
    assert.deepEqual(r.columns.map((c) => c.name), ['topic', 'owner', 'column_3', 'due']);
    assert.deepEqual(r.rows, [['hiring', 'ann', 'x', 'soon'], ['budget', null, null, null]]);
    await assert.rejects(readAll(spreadsheetType, { path: xlsx }, { table: 'Missing' }), (e: any) => e.code === 'source_table_not_found');
  });

  it('a CSV-export URL: one table, DuckDB types, the bearer token sent', async () => {
    const config = { url, token: 'sheet-token', table_name: 'regions' };
    assert.equal((await spreadsheetType.testConnection(config, AbortSignal.timeout(10_000), TEST_RUNTIME)).ok, true);
    const [t] = await spreadsheetType.discover(config, AbortSignal.timeout(10_000), TEST_RUNTIME);
    assert.deepEqual(t, { name: 'regions', columns: [{ name: 'region', type: 'VARCHAR' }, { name: 'revenue', type: 'DOUBLE' }, { name: 'day', type: 'DATE' }] });
    const r = await readAll(spreadsheetType, config, { table: 'regions' });
    assert.deepEqual(r.rows, [['north', 1200.5, '2024-05-01'], ['south', 980, '2024-05-02']]);
    const denied = await spreadsheetType.testConnection({ ...config, token: 'wrong' }, AbortSignal.timeout(10_000));
    assert.match(denied.message, /authentication failed/);
    const port = await freePort();
    assert.deepEqual(await spreadsheetType.testConnection({ url: `http://127.0.0.1:${port}/x.csv` }, AbortSignal.timeout(10_000)), { ok: false, message: `127.0.0.1:${port}: connection refused` });
  });

  it('file tracking: the workbook mtime, or the export URL\'s Last-Modified', async () => {
    assert.equal(await spreadsheetType.modifiedTime!({ path: xlsx }, 'Orders', AbortSignal.timeout(10_000)), fs.statSync(xlsx).mtimeMs / 1000);
    assert.equal(await spreadsheetType.modifiedTime!({ url, token: 'sheet-token' }, 'sheet', AbortSignal.timeout(10_000)), Date.UTC(2024, 4, 1, 8) / 1000);
  });

  it('a relative path resolves inside the project, and cannot leave it', async () => {
    const resolve = (rel: string) => (rel.startsWith('..') ? (() => { throw Object.assign(new Error('outside'), { code: 'path_outside_project' }); })() : path.join(dir, rel));
    const runtime = { project: { resolve, resolveReadable: resolve } } as never;
    assert.equal((await spreadsheetType.discover({ path: 'budget.xlsx' }, AbortSignal.timeout(10_000), runtime)).length, 2);
    await assert.rejects(spreadsheetType.discover({ path: '../x/budget.xlsx' }, AbortSignal.timeout(10_000), runtime), (e: any) => e.code === 'path_outside_project');
  });

  it('refuses a config with neither or both sources', async () => {
    await assert.rejects(spreadsheetType.discover({}, AbortSignal.timeout(10_000)), (e: any) => e.code === 'connector_param_invalid');
    await assert.rejects(spreadsheetType.discover({ path: xlsx, url }, AbortSignal.timeout(10_000)), (e: any) => e.code === 'connector_param_invalid' && e.details.field === 'url');
  });
});
