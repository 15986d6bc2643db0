/**
 * How deeply nested a value or type may be before it reaches the engine (issue 38 point 1).
 * DuckDB builds nested types and infers JSON structures by recursion in native code: a JSON
 * structure 10,000 levels deep given to json_transform, or a JSON file of 10,000 nested `[`
 * given to read_json, overflows its stack and kills the process (SIGSEGV); a few hundred levels
 * of nested lists in SQL already take seconds to bind. Real data stays far below the limit.
 */
import fs from 'node:fs';
import { badRequest } from './errors.js';

/** Deepest nesting of lists, structs, maps, JSON arrays and objects dp lets reach the engine. */
export const MAX_NESTING_DEPTH = 64;

/**
 * The deepest nesting of arrays and objects in JSON text fed in pieces (a file streamed chunk
 * by chunk): it follows only brackets and strings, so it costs one pass and no memory, and it
 * reads NDJSON the same (each line starts again at depth 0).
 */
export class JsonDepthScanner {
  depth = 0;
  max = 0;
  private inString = false;
  private escaped = false;

  feed(chunk: Uint8Array | string): this {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c /* \ */) this.escaped = true;
        else if (b === 0x22 /* " */) this.inString = false;
      } else if (b === 0x22) this.inString = true;
      else if (b === 0x5b /* [ */ || b === 0x7b /* { */) {
        if (++this.depth > this.max) this.max = this.depth;
      } else if ((b === 0x5d /* ] */ || b === 0x7d) /* } */ && this.depth > 0) this.depth--;
    }
    return this;
  }
}

/** The deepest nesting of arrays and objects in a JSON text. */
export function jsonNestingDepth(text: string): number {
  return new JsonDepthScanner().feed(text).max;
}

/** The 400 `nesting_too_deep` refusal: `what` says where the nesting was found. */
export function nestingTooDeep(what: string, depth: number) {
  return badRequest('nesting_too_deep', `${what} is nested ${depth} levels deep; at most ${MAX_NESTING_DEPTH} are allowed`, { depth, limit: MAX_NESTING_DEPTH });
}

/**
 * Throws `nesting_too_deep` when a JSON (or NDJSON) file nests deeper than the limit, before
 * any engine reads it. Streams the file: an upload of any size costs one pass.
 */
export async function assertJsonFileNesting(file: string, what = 'The JSON file'): Promise<void> {
  const scanner = new JsonDepthScanner();
  for await (const chunk of fs.createReadStream(file)) {
    scanner.feed(chunk as Buffer);
    // Stop reading at the first level too many: the rest does not change the answer.
    if (scanner.max > MAX_NESTING_DEPTH) throw nestingTooDeep(what, scanner.max);
  }
}
