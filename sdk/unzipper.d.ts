// The part of unzipper's API sdk/workbook-limits.ts and sdk/workbook-reader.ts use (exceljs's own zip reader; it ships no types).
declare module 'unzipper' {
  interface CentralDirectoryEntry {
    path: string;
    type: 'File' | 'Directory';
    compressedSize: number;
    uncompressedSize: number;
    fileNameLength: number;
    extraFieldLength: number;
    offsetToLocalFileHeader: number;
    stream(): NodeJS.ReadableStream & { destroy?: (error?: Error) => void };
    /** The whole part, inflated. */
    buffer(): Promise<Buffer>;
  }
  export interface CentralDirectory {
    files: CentralDirectoryEntry[];
    offsetToStartOfCentralDirectory: number;
    sizeOfCentralDirectory: number;
  }
  interface Source {
    size(): Promise<number>;
    stream(offset: number, length?: number): NodeJS.ReadableStream;
  }
  export const Open: { file(path: string): Promise<CentralDirectory>; custom(source: Source): Promise<CentralDirectory> };
}
