// Reading an .xlsx row by row: the sdk's worksheet reader (sdk/workbook-reader.ts: exceljs's
// parsers fed from the zip's central directory) against exceljs's own streaming reader, its
// baseline, on the same workbook, each round in a fresh process, rounds alternating. The
// workbook is what exceljs's streaming writer makes (200,000 rows of four columns, shared
// strings), which stores the sheet before the shared strings: exceljs's reader copies the sheet
// to a temp file and reads it back; the sdk's reader streams it from the zip.
// Prints each reader's median wall time, CPU time and peak RSS. Needs a build.
// Usage: node bench/workbook-read.mjs (ROWS=200000 ROUNDS=5)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './common.mjs';

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROWS = Number(process.env.ROWS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

// One read, in this process (the child of a round).
if (process.argv[2] === '--read') {
  const [, , , reader, file] = process.argv;
  const started = process.hrtime.bigint();
  let rows = 0;
  if (reader === 'exceljs') {
    const { default: ExcelJS } = await import('exceljs');
    const workbook = new ExcelJS.stream.xlsx.WorkbookReader(file, { worksheets: 'emit', sharedStrings: 'cache', hyperlinks: 'ignore', styles: 'cache', entries: 'ignore' });
    for await (const sheet of workbook) for await (const _ of sheet) rows++;
  } else {
    const { readWorksheets } = await import(path.join(repo, 'dist', 'sdk', 'workbook-reader.js'));
    for await (const sheet of readWorksheets(file, "'rows.xlsx'")) for await (const _ of sheet) rows++;
  }
  const cpu = process.cpuUsage();
  process.stdout.write(JSON.stringify({ rows, ms: Number(process.hrtime.bigint() - started) / 1e6, cpuMs: (cpu.user + cpu.system) / 1000, rssMb: process.resourceUsage().maxRSS / 1024 }));
  process.exit(0);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-xlsx-'));
const file = path.join(dir, 'rows.xlsx');
const { default: ExcelJS } = await import('exceljs');
const writer = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: true });
const sheet = writer.addWorksheet('Data');
sheet.addRow(['id', 'name', 'amount', 'at']).commit();
for (let i = 1; i <= ROWS; i++) sheet.addRow([i, `name ${i % 5000}`, i * 1.5, new Date(1_700_000_000_000 + i * 1000)]).commit();
sheet.commit();
await writer.commit();

const runs = { sdk: [], exceljs: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const reader of round % 2 ? ['exceljs', 'sdk'] : ['sdk', 'exceljs']) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--read', reader, file], { cwd: repo, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${reader}: ${r.stderr}`);
    const result = JSON.parse(r.stdout);
    if (result.rows !== ROWS + 1) throw new Error(`${reader} read ${result.rows} rows, not ${ROWS + 1}`);
    runs[reader].push(result);
  }
}
fs.rmSync(dir, { recursive: true, force: true });

const row = (reader) => ({ ms: median(runs[reader].map((r) => r.ms)), cpuMs: median(runs[reader].map((r) => r.cpuMs)), rssMb: median(runs[reader].map((r) => r.rssMb)) });
const sdk = row('sdk');
const base = row('exceljs');
console.log(`${ROWS} rows, ${ROUNDS} rounds each, medians (os.loadavg ${os.loadavg()[0].toFixed(1)})`);
for (const [name, r] of [['sdk reader', sdk], ['exceljs reader (baseline)', base]]) console.log(`${name.padEnd(26)} ${r.ms.toFixed(0).padStart(6)} ms  cpu ${r.cpuMs.toFixed(0).padStart(6)} ms  peak rss ${r.rssMb.toFixed(0)} MB`);
console.log(`ratio (baseline / sdk): wall ${(base.ms / sdk.ms).toFixed(2)}, cpu ${(base.cpuMs / sdk.cpuMs).toFixed(2)}`);
