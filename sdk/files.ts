/**
 * The files plugin's service: the same path rules, reads and atomic saves as `/api/files/*`, for
 * plugins that read or write project files on a caller's behalf (the notebooks plugin's
 * collaboration documents). Paths are project-relative with forward slashes.
 */
import type { Caller } from './auth.js';
import { createServiceRef } from './refs.js';

export interface ProjectFileRead {
  /** Project-relative path, forward slashes. */
  path: string;
  /** UTF-8 content, `.env` values shown as `${NAME}` references (as GET /api/files/* serves it). */
  content: string;
  /** sha256 of the bytes on disk (pass it back as `baseSha256` to save only over this version). */
  sha256: string;
}

export interface ProjectFileSaved {
  path: string;
  created: boolean;
  sha256: string;
}

export interface FilesService {
  /**
   * The project-relative form of `path` when the files API may touch it (inside the project with
   * symlinks followed, not hidden, not a database file); with `save`, also one of the extensions a
   * save allows. Throws the files API's DpErrors (400 `path_outside_project`, `protected_path`,
   * `extension_not_allowed`, …).
   */
  check(path: string, options?: { save?: boolean }): string;
  /** Reads a file as GET /api/files/* does for `caller` (a data file holding columns masked for them is refused, 403). 404 `file_not_found` when absent. */
  read(path: string, caller: Caller): Promise<ProjectFileRead>;
  /**
   * Saves as PUT /api/files/* does: allowed extension, content validated (YAML, notebooks),
   * written atomically and durably. With `baseSha256`, only when the file is still that version
   * (409 `file_conflict` otherwise; null: the file must not exist).
   */
  write(path: string, content: string, options?: { baseSha256?: string | null }): ProjectFileSaved;
}

export const FILES_SERVICE = createServiceRef<FilesService>('files');
