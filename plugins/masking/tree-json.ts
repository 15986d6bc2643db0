/**
 * Lossless JSON for DuckDB parse trees. JSON.parse turns UINT64_MAX locations into floats,
 * drops the `.0` of DOUBLE constants (json_deserialize_sql then rejects `10` where it wants a
 * double) and rounds integers beyond 2^53. Here every number that is not a safe integer literal
 * is carried through as a tagged string and written back exactly as DuckDB wrote it.
 */
const TAG = '\u0001dpnum:';
const TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

export function parseTreeJson(text: string): any {
  const protectedText = text.replace(TOKENS, (m) => {
    if (m.startsWith('"')) return m;
    const plainInt = /^-?\d+$/.test(m) && Number.isSafeInteger(Number(m));
    return plainInt ? m : JSON.stringify(TAG + m);
  });
  return JSON.parse(protectedText);
}

export function stringifyTreeJson(tree: unknown): string {
  return JSON.stringify(tree).replace(/"\\u0001dpnum:([^"]+)"/g, '$1');
}
