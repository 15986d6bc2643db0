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

/**
 * The colours a collaborator's cursor may have: the server assigns one per user (awareness
 * `user.color`), and the page maps it to a CSS class (`dp-peer-<index>`), so no colour string a
 * client sent ever reaches a style.
 */
export const PEER_COLORS = ['#30bced', '#6eeb83', '#ffbc42', '#ee6352', '#9ac2c9', '#8acb88', '#1be7ff', '#c38dd6'] as const;

/** What the server shows of a collaborator (awareness `user`): set by the server from the socket's caller. */
export interface PeerUser {
  name: string;
  role: string;
  color: (typeof PEER_COLORS)[number];
}

/** The index of a colour in PEER_COLORS (0 for anything else), for the page's CSS class. */
export const peerColorIndex = (color: unknown): number => Math.max(0, PEER_COLORS.indexOf(color as (typeof PEER_COLORS)[number]));

/** Bytes one awareness message may have (a cursor and a name need a few hundred). */
export const MAX_AWARENESS_BYTES = 8 * 1024;
/** Awareness messages a socket may send per second; later ones in the second are merged into one sent when it ends. */
export const AWARENESS_PER_SECOND = 20;
/** Awareness client ids one socket may speak for (a page has one per document). */
export const MAX_AWARENESS_IDS_PER_SOCKET = 4;
/** Characters of a display name (without auth the page picks its own). */
export const MAX_PEER_NAME = 64;
