/**
 * The sdk's worksheet reader (sdk/workbook-reader.ts), which both spreadsheet readers use.
 * exceljs's own streaming reader reads the zip in one pass and ends that pass as soon as the
 * file has been read, dropping the entries its consumer had not reached yet: a consumer still
 * busy with a sheet's rows (an import writing them) lost every later sheet without an error, and
 * an exceljs-written workbook (its workbook part stored last) failed under load with "Cannot
 * read properties of undefined (reading 'sheets')".
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { plainCellValue, readWorksheets } from '../../sdk/index.js';
import { tempDir } from '../helpers.js';

const dir = tempDir('dp-workbook-reader-');
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function threeSheets(): ExcelJS.Workbook {
  const wb = new ExcelJS.Workbook();
  for (const name of ['First', 'Second', 'Third']) {
    const ws = wb.addWorksheet(name);
    ws.addRow(['k', 'v']);
    for (let i = 1; i <= 30; i++) ws.addRow([i, `${name} ${i}`]);
  }
  return wb;
}

/** Each sheet's name, row count and last row, reading rows as `onRow` lets it. */
async function readAll(file: string, onRow: (index: number) => Promise<void> = async () => {}): Promise<string[]> {
  const seen: string[] = [];
  for await (const sheet of readWorksheets(file, `'${path.basename(file)}'`)) {
    let rows = 0;
    let last: unknown[] = [];
    for await (const row of sheet) {
      await onRow(rows++);
      last = (row.values as unknown[]).slice(1).map(plainCellValue);
    }
    seen.push(`${sheet.name}:${rows}:${last.join(',')}`);
  }
  return seen;
}

const ALL = ['First:31:30,First 30', 'Second:31:30,Second 30', 'Third:31:30,Third 30'];

describe('worksheet reader', () => {
  it('reads every sheet of a workbook whose sheets follow its shared strings, while the consumer is slow', async () => {
    // The order LibreOffice and others write: shared strings before the sheets, so a one-pass
    // reader streams the sheets straight from the zip while the rest of the file is read on.
    const source = await JSZip.loadAsync(await threeSheets().xlsx.writeBuffer());
    const first = ['[Content_Types].xml', '_rels/.rels', 'xl/_rels/workbook.xml.rels', 'xl/workbook.xml', 'xl/sharedStrings.xml', 'xl/styles.xml'];
    const names = Object.keys(source.files).filter((name) => !source.files[name]!.dir);
    const reordered = new JSZip();
    for (const name of [...first, ...names.filter((n) => !first.includes(n))]) reordered.file(name, await source.files[name]!.async('nodebuffer'));
    const file = path.join(dir, 'strings-first.xlsx');
    fs.writeFileSync(file, await reordered.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }));
    // A consumer that takes its time over the first row (as an import writing rows does) while
    // the file is read to its end: exceljs's reader then gave First only.
    assert.deepEqual(await readAll(file, (index) => (index === 0 ? delay(50) : Promise.resolve())), ALL);
  });

  it('reads a workbook exceljs wrote (its workbook part last), many at once', async () => {
    const file = path.join(dir, 'exceljs-order.xlsx');
    await threeSheets().xlsx.writeFile(file);
    const reads = await Promise.all(Array.from({ length: 8 }, () => readAll(file)));
    for (const read of reads) assert.deepEqual(read, ALL);
  });

  it('closes the sheets a consumer leaves, and skips the ones it does not read', async () => {
    const file = path.join(dir, 'partial.xlsx');
    await threeSheets().xlsx.writeFile(file);
    const names: string[] = [];
    for await (const sheet of readWorksheets(file, `'${path.basename(file)}'`)) {
      names.push(sheet.name);
      if (sheet.name === 'Second') break;
    }
    assert.deepEqual(names, ['First', 'Second']);
    const third: string[] = [];
    for await (const sheet of readWorksheets(file, `'${path.basename(file)}'`)) {
      if (sheet.name !== 'Third') continue;
      for await (const row of sheet) third.push(String(plainCellValue((row.values as unknown[])[2])));
    }
    assert.equal(third.length, 31);
    assert.equal(third.at(-1), 'Third 30');
  });

  it('reads on from a workbook removed once the read began: one open descriptor, no part opened again by its path', async () => {
    // unzipper opened the path again for each part when it was first read: that open failed
    // here, on an error no listener took, and the process ended.
    const file = path.join(dir, 'removed.xlsx');
    await threeSheets().xlsx.writeFile(file);
    const seen: string[] = [];
    for await (const sheet of readWorksheets(file, `'${path.basename(file)}'`)) {
      if (sheet.name === 'First') fs.rmSync(file);
      let rows = 0;
      for await (const _ of sheet) rows++;
      seen.push(`${sheet.name}:${rows}`);
    }
    assert.deepEqual(seen, ['First:31', 'Second:31', 'Third:31']);
  });

  it('gives formulas their result, rich text and hyperlinks their text, errors null', () => {
    assert.equal(plainCellValue({ formula: 'A1*2', result: 4 }), 4);
    assert.equal(plainCellValue({ sharedFormula: 'A1' }), null);
    assert.equal(plainCellValue({ richText: [{ text: 'a' }, { text: 'b' }] }), 'ab');
    assert.equal(plainCellValue({ text: { richText: [{ text: 'link' }] }, hyperlink: 'https://example.com' }), 'link');
    assert.equal(plainCellValue({ error: '#DIV/0!' }), null);
    const when = new Date('2024-01-02T00:00:00Z');
    assert.equal(plainCellValue(when), when);
    assert.equal(plainCellValue(undefined), null);
  });
});
