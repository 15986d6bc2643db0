/**
 * Spreadsheet bombs (issue 38 point 3): an .xlsx whose highly compressed shared strings expand
 * far past its size is refused before exceljs reads it (it holds the shared-string table in the
 * heap whole), and so is a sheet with more cells than a read may take. After such an upload,
 * SIGTERM still stops `dp serve`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { WORKBOOK_LIMITS } from '../../sdk/workbook-limits.js';
import { makeProject, spawnServe, startServer, tempDir, type TestServer } from '../helpers.js';

const dir = tempDir('dp-xlsx-bomb-');

/** A small real workbook (exceljs writes its strings to the shared-string table). */
async function smallWorkbook(): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Data');
  ws.addRow(['team', 'amount', 'note', 'owner']);
  ws.addRow(['data', 1, 'a', 'ada']);
  ws.addRow(['web', 2, 'b', 'grace']);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/**
 * The workbook with its shared-string table replaced by `bytes` of strings, generated as the zip
 * is written (never whole in this process's memory): a few KB on disk.
 */
async function bomb(bytes: number): Promise<string> {
  const zip = await JSZip.loadAsync(await smallWorkbook());
  const item = '<si><t>' + 'x'.repeat(1000) + '</t></si>';
  const count = Math.ceil(bytes / item.length);
  const strings = Readable.from(
    (function* () {
      yield `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${count}" uniqueCount="${count}">`;
      for (let i = 0; i < count; i++) yield item;
      yield '</sst>';
    })(),
  );
  zip.file('xl/sharedStrings.xml', strings);
  const file = path.join(dir, `bomb-${bytes}.xlsx`);
  await pipeline(zip.generateNodeStream({ type: 'nodebuffer', streamFiles: true, compression: 'DEFLATE', compressionOptions: { level: 9 } }), fs.createWriteStream(file));
  return file;
}

function upload(url: string, name: string, data: Buffer, preview: boolean) {
  const form = new FormData();
  if (preview) form.append('preview', 'true');
  form.append('file', new Blob([new Uint8Array(data)]), name);
  return fetch(`${url}/api/import`, { method: 'POST', body: form });
}

describe('spreadsheet bombs', () => {
  let s: TestServer;
  let bombFile: string;
  before(async () => {
    s = await startServer(makeProject());
    bombFile = await bomb(WORKBOOK_LIMITS.heldPartBytes + 8 * 1024 * 1024);
  });
  after(() => s.close());

  it('refuses highly compressed shared strings before parsing (preview and import)', async () => {
    const data = fs.readFileSync(bombFile);
    assert.ok(data.length < 1024 * 1024, `the bomb is small on disk (${data.length} bytes)`);
    const heapBefore = process.memoryUsage().heapUsed;
    for (const preview of [true, false]) {
      const r = await upload(s.url, 'bomb.xlsx', data, preview);
      const body = (await r.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
      assert.equal(r.status, 413, JSON.stringify(body));
      assert.equal(body.error.code, 'workbook_too_large');
      assert.equal(body.error.details.part, 'xl/sharedStrings.xml');
      assert.match(body.error.message, /^'bomb\.xlsx' expands to more than 32 MB/);
    }
    // Nothing close to the table's size was taken from the heap (exceljs would hold it twice over, as UTF-16).
    assert.ok(process.memoryUsage().heapUsed - heapBefore < WORKBOOK_LIMITS.heldPartBytes, `heap grew by ${process.memoryUsage().heapUsed - heapBefore}`);
    assert.equal((await s.request('GET', '/api/health')).body.status, 'ok');
  });

  it('still reads a normal workbook, and refuses a sheet with more cells than a read may take', async () => {
    const small = await smallWorkbook();
    const ok = await upload(s.url, 'small.xlsx', small, true);
    assert.equal(ok.status, 200, await ok.text());
    const saved = WORKBOOK_LIMITS.cells;
    WORKBOOK_LIMITS.cells = 10;
    try {
      const r = await upload(s.url, 'small.xlsx', small, false);
      const body = (await r.json()) as { error: { code: string; details: Record<string, unknown> } };
      assert.equal(r.status, 413, JSON.stringify(body));
      assert.equal(body.error.code, 'workbook_too_large');
      assert.deepEqual(body.error.details, { cells: 12, limit: 10 });
    } finally {
      WORKBOOK_LIMITS.cells = saved;
    }
  });

  it('refuses a file that is not a zip as an unreadable workbook', async () => {
    const r = await upload(s.url, 'fake.xlsx', Buffer.from('id,name\n1,a\n'), true);
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'workbook_unreadable');
  });

  it('refuses a zip without the workbook part as an unreadable workbook, naming the part', async () => {
    const zip = await JSZip.loadAsync(await smallWorkbook());
    zip.remove('xl/workbook.xml');
    const r = await upload(s.url, 'headless.xlsx', await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }), true);
    assert.equal(r.status, 400);
    const { error } = (await r.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'workbook_unreadable');
    assert.match(error.message, /'headless\.xlsx' is not a well-formed \.xlsx: it has no workbook part \(xl\/workbook\.xml\)/);
  });

  it('SIGTERM after a bomb upload stops dp serve', async () => {
    const root = makeProject();
    const served = await spawnServe(root);
    try {
      const { url } = served;
      const r = await upload(url, 'bomb.xlsx', fs.readFileSync(bombFile), true);
      assert.equal(r.status, 413);
      assert.equal((await served.stop('SIGTERM')).code, 0);
    } finally {
      served.child.kill('SIGKILL');
    }
  });
});
