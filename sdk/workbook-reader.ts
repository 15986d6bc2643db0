/**
 * The worksheets of an .xlsx, each read row by row: what every spreadsheet reader in dp uses
 * (uploads and the `spreadsheet` connector).
 *
 * exceljs's own streaming reader (4.4.0) reads the zip in one pass through unzipper's `Parse`,
 * pausing it while its consumer works. `Parse` ends as soon as the file has been read, and the
 * entries it had found but its consumer had not taken yet are dropped without an error (exceljs
 * issue 3064): under load the workbook part, which exceljs-written files store last, so the read
 * failed with "Cannot read properties of undefined (reading 'sheets')"; behind a consumer slow
 * over a sheet's rows, every later sheet, the read "succeeding". So this reader keeps exceljs's
 * parsers but feeds them from the zip's central directory, opened once and checked against
 * WORKBOOK_LIMITS (sdk/workbook-limits.ts): the parts held whole (relationships, workbook,
 * shared strings, styles; that check bounds their size) are inflated into memory first, then
 * each worksheet streams from its own entry, in sheet order.
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import type ExcelJS from 'exceljs';
import type { CentralDirectory } from 'unzipper';
import { openCheckedWorkbook, WORKBOOK_PART } from './workbook-limits.js';

/** exceljs loads with the first workbook read, not with the sdk (docs/plugins.md "Activation on demand"). */
const load = createRequire(import.meta.url);

/** One worksheet: its name and its rows (exceljs rows: `values` is 1-based). */
export interface WorksheetRows extends AsyncIterable<ExcelJS.Row> {
  readonly name: string;
}

/** The parts of exceljs's WorkbookReader this reader drives (exceljs 4.4.0, pinned by the lockfile). */
interface ReaderParts {
  input: string;
  what: string;
  _parseRels(entry: Readable): Promise<void>;
  _parseWorkbook(entry: Readable): Promise<void>;
  _parseSharedStrings(entry: Readable): AsyncGenerator<unknown>;
  _parseStyles(entry: Readable): Promise<void>;
  _parseWorksheet(rows: AsyncIterable<Buffer>, sheetNo: string): Generator<{ eventType: string; value: WorksheetRows }>;
}

const WORKSHEET_PART = /^xl\/worksheets\/sheet(\d+)\.xml$/;

type ReaderClass = new (file: string, options: Record<string, unknown>, what: string) => AsyncIterable<WorksheetRows>;
let readerClass: ReaderClass | undefined;

function directoryReader(): ReaderClass {
  if (readerClass) return readerClass;
  const Base = (load('exceljs') as typeof ExcelJS).stream.xlsx.WorkbookReader as unknown as new (file: string, options: Record<string, unknown>) => object;
  class DirectoryWorkbookReader extends Base {
    constructor(
      file: string,
      options: Record<string, unknown>,
      readonly what: string,
    ) {
      super(file, options);
    }

    async *[Symbol.asyncIterator](): AsyncGenerator<WorksheetRows> {
      const self = this as unknown as ReaderParts;
      const zip = await openCheckedWorkbook(self.input, self.what);
      try {
        yield* readParts(self, zip.directory);
      } finally {
        await zip.close();
      }
    }
  }
  return (readerClass = DirectoryWorkbookReader as unknown as ReaderClass);
}

/** Feeds exceljs's parsers: the parts held whole first, then each worksheet, in sheet order. */
async function* readParts(self: ReaderParts, directory: CentralDirectory): AsyncGenerator<WorksheetRows> {
  const parts = new Map(directory.files.filter((f) => f.type === 'File').map((f) => [f.path, f]));
  // A held part is handed over whole, as a stream that cannot end before it is read.
  const whole = async (name: string): Promise<Readable | undefined> => {
    const part = parts.get(name);
    return part ? Readable.from([await part.buffer()]) : undefined;
  };
  const rels = await whole('xl/_rels/workbook.xml.rels');
  if (rels) await self._parseRels(rels);
  const workbook = await whole(WORKBOOK_PART);
  if (workbook) await self._parseWorkbook(workbook);
  const sharedStrings = await whole('xl/sharedStrings.xml');
  if (sharedStrings) for await (const _ of self._parseSharedStrings(sharedStrings)) void _;
  const styles = await whole('xl/styles.xml');
  if (styles) await self._parseStyles(styles);
  const sheets = [...parts.keys()]
    .map((name) => WORKSHEET_PART.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]));
  for (const [name, sheetNo] of sheets) {
    const rows = parts.get(name!)!.stream() as Readable;
    try {
      for (const { eventType, value } of self._parseWorksheet(rows, sheetNo!)) if (eventType === 'worksheet') yield value;
    } finally {
      // A sheet the consumer left unread stops reading here.
      rows.destroy();
    }
  }
}

/**
 * The worksheets of the .xlsx at `file`, in sheet order, once the workbook is known to stay
 * within WORKBOOK_LIMITS (sdk/workbook-limits.ts: the first step throws 413 `workbook_too_large`
 * or 400 `workbook_unreadable`, naming the file as `what`). Read each sheet's rows before asking
 * for the next sheet; a sheet left unread is skipped.
 */
export function readWorksheets(file: string, what: string): AsyncIterable<WorksheetRows> {
  return new (directoryReader())(file, { worksheets: 'emit', sharedStrings: 'cache', hyperlinks: 'ignore', styles: 'cache', entries: 'ignore' }, what);
}

/** A cell's value as a plain value: formulas give their result, rich text and hyperlinks their text, errors null. */
export function plainCellValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || v instanceof Date) return v;
  const o = v as Record<string, unknown>;
  if ('result' in o) return plainCellValue(o.result);
  if ('formula' in o || 'sharedFormula' in o) return null;
  if (Array.isArray(o.richText)) return (o.richText as Array<{ text?: string }>).map((r) => r.text ?? '').join('');
  if ('text' in o) return plainCellValue(o.text);
  if ('error' in o) return null;
  return JSON.stringify(o);
}
