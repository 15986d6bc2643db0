// The part of unzipper's API sdk/workbook-limits.ts uses (exceljs's own zip reader; it ships no types).
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
  }
  interface CentralDirectory {
    files: CentralDirectoryEntry[];
    offsetToStartOfCentralDirectory: number;
    sizeOfCentralDirectory: number;
  }
  export const Open: { file(path: string): Promise<CentralDirectory> };
}
