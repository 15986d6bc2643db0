/**
 * The message framing on /ws/collaborate: y-websocket's, so a stock Yjs WebSocket client works.
 * Every binary message starts with a varUint type; sync and awareness are y-protocols' own
 * payloads. Types 100 and 101 are dp's additions (a stock client ignores them).
 */

/** y-protocols/sync: step 1 (state vector), step 2 (missing updates), update. */
export const MESSAGE_SYNC = 0;
/** y-protocols/awareness: an awareness update (cursors, user names). */
export const MESSAGE_AWARENESS = 1;
/** y-protocols/auth: the server's "permission denied" with a reason. */
export const MESSAGE_AUTH = 2;
/** A client asks for every awareness state. */
export const MESSAGE_QUERY_AWARENESS = 3;
/** Client → server: save the document (no payload). Server → client: the result as a JSON varString (`{saved, path, sha256}` or `{error}`). */
export const MESSAGE_SAVE = 100;
/** Server → client, right after joining: varString `read-write` or `read-only` (a viewer: its document updates are dropped). */
export const MESSAGE_ACCESS = 101;

export type Access = 'read-write' | 'read-only';

/** The Y.Doc layout of a `.dpnb` notebook: `cells`, a Y.Array of Y.Map {id, type, source: Y.Text}. */
export const NOTEBOOK_CELLS = 'cells';
/** The Y.Doc layout of any other text file: one Y.Text. */
export const TEXT_CONTENT = 'content';

export const CELL_TYPES = ['markdown', 'code', 'sql', 'ingest'] as const;
export type CellType = (typeof CELL_TYPES)[number];
