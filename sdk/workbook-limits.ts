/**
 * What an uploaded .xlsx may expand to, checked before any spreadsheet parser reads it (issue 38
 * point 3). An .xlsx is a zip of XML parts; the shared-string table, the styles and the workbook
 * parts are held in memory whole while the sheets stream. A few MB of highly compressed shared
 * strings expand to gigabytes of heap. So the zip's central directory is read first (its
 * declared sizes), every part held in memory is inflated once to count its real size (the
 * declared one can lie), nothing may hide between the listed entries (a streaming unzip reads
 * what is there, listed or not), and the rows read are counted against a cell limit.
 */
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import type { CentralDirectory } from 'unzipper';
import { badRequest, DpError } from './errors.js';
import { requireOnFirstUse } from './require-on-first-use.js';

/** unzipper (exceljs's zip reader) loads with the first workbook read, not with the sdk (docs/plugins.md "Activation on demand"). */
const unzipper = requireOnFirstUse<typeof import('unzipper')>(import.meta.url, 'unzipper');

export const WORKBOOK_LIMITS = {
  /** All parts together, uncompressed. */
  totalBytes: 1024 * 1024 * 1024,
  /** One part held in memory whole (shared strings, styles, workbook, relationships…), uncompressed. */
  heldPartBytes: 32 * 1024 * 1024,
  /** Cells read from one sheet. */
  cells: 20_000_000,
};

/** Bytes of a local file header besides its name and extra field; what unlisted bytes may add up to between entries. */
const LOCAL_HEADER_BYTES = 30;
const SLACK_PER_ENTRY = 1024;

/** The workbook part: the sheets' names and order. */
export const WORKBOOK_PART = 'xl/workbook.xml';

/** Worksheets stream row by row; every other part is read whole. */
const STREAMED_PART = /^xl\/worksheets\/[^/]+\.xml$/i;

function tooLarge(what: string, part: string | null, bytes: number, limit: number): DpError {
  return new DpError(413, 'workbook_too_large', `${what} expands to more than ${Math.round(limit / 1024 / 1024)} MB${part ? ` (${part})` : ''}; split it or save it as CSV`, { ...(part ? { part } : {}), bytes, limit });
}

function unreadable(what: string, why: string): DpError {
  return badRequest('workbook_unreadable', `${what} is not a well-formed .xlsx: ${why}`, {});
}

/** Inflates one part without keeping it, and stops as soon as it passes `limit`. */
async function inflatedSize(entry: { stream(): NodeJS.ReadableStream & { destroy?: (error?: Error) => void } }, limit: number): Promise<number> {
  let bytes = 0;
  const stream = entry.stream();
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > limit) {
      stream.destroy?.();
      break;
    }
  }
  return bytes;
}

/** A zip's directory whose parts read from one open descriptor; `close` it when done. */
export interface OpenZip {
  directory: CentralDirectory;
  close(): Promise<void>;
}

/**
 * Opens the zip at `file` once and reads every part through that descriptor. unzipper's own file
 * source opens the path again for each part, when the part is first read, and an error of that
 * read (the file removed or replaced meanwhile, a read error) reached no listener: the process
 * ended on it. Here a removed or replaced file reads on as it was when opened, and a read error
 * ends the part early, which the part's reader reports as an error (unzipper's FILE_ENDED).
 */
async function openZip(file: string): Promise<OpenZip & { size: number }> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const source = {
      size: async () => size,
      stream(offset: number, length?: number) {
        const part = new PassThrough();
        const read = fs.createReadStream('', { fd: handle, autoClose: false, start: offset, ...(length ? { end: offset + length } : {}) });
        read.on('error', () => part.end());
        return read.pipe(part);
      },
    };
    const directory = await unzipper().Open.custom(source);
    return { directory, size, close: () => handle.close() };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/**
 * The .xlsx at `file`, opened once, once its parts are known to stay within WORKBOOK_LIMITS: the
 * bytes checked are the bytes read. Throws 413 `workbook_too_large` or 400 `workbook_unreadable`
 * (closing the file). Reads the central directory and inflates the parts held in memory, in
 * constant memory. `what` names the file in the message.
 */
export async function openCheckedWorkbook(file: string, what: string): Promise<OpenZip> {
  let zip: OpenZip & { size: number };
  try {
    zip = await openZip(file);
  } catch {
    throw unreadable(what, 'its zip directory does not read');
  }
  try {
    await checkParts(zip.directory, what, zip.size);
    return zip;
  } catch (e) {
    await zip.close();
    throw e;
  }
}

async function checkParts(directory: CentralDirectory, what: string, fileSize: number): Promise<void> {
  const entries = [...directory.files].sort((a, b) => a.offsetToLocalFileHeader - b.offsetToLocalFileHeader);
  // The part that names the sheets, where exceljs's parsers (and so sdk/workbook-reader.ts) read it.
  if (!entries.some((entry) => entry.path === WORKBOOK_PART)) throw unreadable(what, `it has no workbook part (${WORKBOOK_PART})`);
  let total = 0;
  let next = 0;
  for (const entry of entries) {
    if (entry.offsetToLocalFileHeader < next || entry.offsetToLocalFileHeader - next > SLACK_PER_ENTRY) throw unreadable(what, 'its entries overlap or leave unlisted data between them');
    next = entry.offsetToLocalFileHeader + LOCAL_HEADER_BYTES + entry.fileNameLength + entry.compressedSize;
    total += entry.uncompressedSize;
    if (total > WORKBOOK_LIMITS.totalBytes) throw tooLarge(what, null, total, WORKBOOK_LIMITS.totalBytes);
    if (!STREAMED_PART.test(entry.path) && entry.uncompressedSize > WORKBOOK_LIMITS.heldPartBytes) throw tooLarge(what, entry.path, entry.uncompressedSize, WORKBOOK_LIMITS.heldPartBytes);
  }
  // Extra fields of the local headers and data descriptors: a little per entry, never a hidden part.
  const centralStart = Math.min(directory.offsetToStartOfCentralDirectory, fileSize);
  if (centralStart < next - SLACK_PER_ENTRY || centralStart - next > SLACK_PER_ENTRY * (entries.length + 1)) throw unreadable(what, 'it holds data its zip directory does not list');
  for (const entry of entries) {
    if (entry.type !== 'File' || STREAMED_PART.test(entry.path)) continue;
    const bytes = await inflatedSize(entry, WORKBOOK_LIMITS.heldPartBytes).catch(() => {
      throw unreadable(what, `${entry.path} does not inflate`);
    });
    if (bytes > WORKBOOK_LIMITS.heldPartBytes) throw tooLarge(what, entry.path, bytes, WORKBOOK_LIMITS.heldPartBytes);
  }
}

/** Counts the cells a sheet reader produced; throws `workbook_too_large` past WORKBOOK_LIMITS.cells. */
export class CellBudget {
  private used = 0;
  constructor(private readonly what: string) {}

  spend(cells: number): void {
    this.used += cells;
    if (this.used > WORKBOOK_LIMITS.cells) {
      throw new DpError(413, 'workbook_too_large', `${this.what} has more than ${WORKBOOK_LIMITS.cells} cells in the sheet; split it or save it as CSV`, { cells: this.used, limit: WORKBOOK_LIMITS.cells });
    }
  }
}
