/**
 * The server side of /ws/collaborate: one shared Y.Doc per file, seeded from the file on the first
 * join, kept while anyone edits it and for `idle_release_seconds` after the last one left. Editors'
 * updates are applied and sent to everyone else; a viewer's are dropped (never applied, never
 * sent on) while it still receives the document and may send awareness (its cursor).
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { badRequest, DpError, errorMessage, hasPermission, isDpError, notFound, LOCAL_ADMIN, type Caller, type Clock, type FilesService, type Logger, type RouteSocket } from '../../../sdk/index.js';
import {
  AWARENESS_PER_SECOND,
  MAX_AWARENESS_BYTES,
  MAX_AWARENESS_IDS_PER_SOCKET,
  MAX_PEER_NAME,
  MESSAGE_ACCESS,
  MESSAGE_AWARENESS,
  MESSAGE_QUERY_AWARENESS,
  MESSAGE_SAVE,
  MESSAGE_SYNC,
  PEER_COLORS,
  type Access,
  type PeerUser,
} from './protocol.js';
import { documentContent, kindOf, seedDocument, SEED_ORIGIN, type DocumentKind } from './schema.js';

const OPEN = 1;

interface Client {
  socket: RouteSocket;
  caller: Caller;
  writable: boolean;
  /** Awareness client ids this socket set, removed when it leaves. */
  awarenessIds: Set<number>;
  /** Updates dropped because the client may not write. */
  dropped: number;
  /** Awareness messages accepted in the current second, from `windowStart` (ms). */
  awarenessWindowStart: number;
  awarenessInWindow: number;
  /** Awareness entries that came past the rate, by client id: applied when the second ends. */
  awarenessPending: Map<number, AwarenessEntry>;
  awarenessTimer: NodeJS.Timeout | null;
}

/** One client's state in an awareness update (y-protocols' framing). */
interface AwarenessEntry {
  id: number;
  clock: number;
  state: string;
}

export interface SaveResult {
  doc: string;
  saved: true;
  sha256: string;
  bytes: number;
}

export interface OpenDocument {
  doc: string;
  clients: number;
  unsaved: boolean;
}

/** What happened to a document released from memory. */
export type Release = 'saved' | 'discarded' | 'unchanged';

export class SharedDocument {
  readonly doc = new Y.Doc();
  readonly awareness = new awarenessProtocol.Awareness(this.doc);
  readonly clients = new Map<RouteSocket, Client>();
  /** True once an editor changed the document after its last save (or the seed). */
  unsaved = false;
  /** sha256 of the file as seeded or last saved: an idle save only writes over that version. */
  baseSha256: string;
  /** The idle release, armed on the hub's clock. */
  idleTimer: unknown = null;

  constructor(
    readonly rel: string,
    readonly kind: DocumentKind,
    content: string,
    sha256: string,
  ) {
    this.baseSha256 = sha256;
    // The server has no cursor of its own.
    this.awareness.setLocalState(null);
    seedDocument(this.doc, kind, content, rel);
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === SEED_ORIGIN) return;
      this.unsaved = true;
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MESSAGE_SYNC);
      syncProtocol.writeUpdate(encoder, update);
      this.broadcast(encoding.toUint8Array(encoder), origin);
    });
    this.awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      const client = origin instanceof Object ? this.clients.get(origin as RouteSocket) : undefined;
      if (client) {
        for (const id of [...added, ...updated]) client.awarenessIds.add(id);
        for (const id of removed) client.awarenessIds.delete(id);
      }
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MESSAGE_AWARENESS);
      encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(this.awareness, [...added, ...updated, ...removed]));
      this.broadcast(encoding.toUint8Array(encoder), null);
    });
  }

  /** Sends one encoded message to every client but `except` (the socket it came from). */
  broadcast(message: Uint8Array, except: unknown): void {
    for (const [socket] of this.clients) if (socket !== except) send(socket, message);
  }

  text(previous: string | null): string {
    return documentContent(this.doc, this.kind, previous, this.rel);
  }

  destroy(): void {
    this.awareness.destroy();
    this.doc.destroy();
  }
}

/**
 * Bytes a client may leave unread before it is dropped, as an SSE subscriber is (issue 34 item 5:
 * one stalled reader must not grow the server's memory without bound). Its reconnect gets the
 * whole document from the sync protocol, so nothing is lost.
 */
export const MAX_UNREAD_BYTES = 4 * 1024 * 1024;
/** WebSocket close code 1013, "try again later". */
const TOO_SLOW = 1013;

function send(socket: RouteSocket, message: Uint8Array | string): void {
  if (socket.readyState !== OPEN) return;
  if ((socket.bufferedAmount ?? 0) > MAX_UNREAD_BYTES) {
    socket.close(TOO_SLOW, 'reading too slowly: reconnect');
    return;
  }
  try {
    socket.send(typeof message === 'string' ? message : Buffer.from(message.buffer, message.byteOffset, message.byteLength));
  } catch {
    socket.close();
  }
}

function encodeString(type: number, text: string): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, type);
  encoding.writeVarString(encoder, text);
  return encoding.toUint8Array(encoder);
}

export interface HubOptions {
  files: () => FilesService;
  log: Logger;
  /** Milliseconds an idle document stays in memory. */
  idleReleaseMs: number;
  /** Where the idle release is timed (ctx.clock: a test moves its own). */
  clock: Clock;
}

export class CollaborationHub {
  private readonly documents = new Map<string, Promise<SharedDocument>>();

  constructor(private readonly options: HubOptions) {}

  /** The project-relative path of `doc` when it may be shared: the files API's path rules and save extensions. */
  checkDoc(doc: unknown): string {
    if (typeof doc !== 'string' || !doc) throw badRequest('doc_required', 'Name the file to edit: ?doc=<project-relative path>', { field: 'doc' });
    return this.options.files().check(doc, { save: true });
  }

  list(): OpenDocument[] {
    return [...this.opened()].map((d) => ({ doc: d.rel, clients: d.clients.size, unsaved: d.unsaved }));
  }

  private *opened(): Iterable<SharedDocument> {
    for (const [rel] of this.documents) {
      const d = this.loaded.get(rel);
      if (d) yield d;
    }
  }

  /** Documents whose seeding finished (the map above also holds ones still loading). */
  private readonly loaded = new Map<string, SharedDocument>();

  private open(rel: string, caller: Caller): Promise<SharedDocument> {
    let pending = this.documents.get(rel);
    if (!pending) {
      pending = this.options
        .files()
        .read(rel, caller)
        .then((file) => {
          const shared = new SharedDocument(rel, kindOf(rel), file.content, file.sha256);
          this.loaded.set(rel, shared);
          this.options.log.debug('collaboration document opened', { doc: rel });
          return shared;
        });
      this.documents.set(rel, pending);
      // A file that cannot be read is not remembered: the next join tries again.
      pending.catch(() => this.documents.delete(rel));
    }
    return pending;
  }

  /**
   * A socket joins `doc`. Listens at once (messages sent before the document is loaded are
   * handled in order once it is), then sends the server's sync step 1, the access and every
   * awareness state.
   */
  join(socket: RouteSocket, doc: unknown, caller: Caller): void {
    const queue: Buffer[] = [];
    let shared: SharedDocument | null = null;
    let client: Client | null = null;
    let closed = false;
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return; // text frames carry only the kernel's first-message token
      if (!shared || !client) queue.push(data);
      else this.receive(shared, client, data);
    });
    socket.on('close', () => {
      closed = true;
      if (shared && client) this.leave(shared, client);
    });
    socket.on('error', () => socket.close());

    let rel: string;
    try {
      rel = this.checkDoc(doc);
    } catch (e) {
      return refuse(socket, e);
    }
    this.open(rel, caller).then(
      (d) => {
        if (closed) return this.scheduleRelease(d);
        shared = d;
        client = {
          socket,
          caller,
          writable: hasPermission(caller, 'write'),
          awarenessIds: new Set(),
          dropped: 0,
          awarenessWindowStart: 0,
          awarenessInWindow: 0,
          awarenessPending: new Map(),
          awarenessTimer: null,
        };
        if (d.idleTimer) this.options.clock.clearTimeout(d.idleTimer);
        d.idleTimer = null;
        d.clients.set(socket, client);
        const access: Access = client.writable ? 'read-write' : 'read-only';
        send(socket, encodeString(MESSAGE_ACCESS, access));
        const encoder = encoding.createEncoder();
        encoding.writeVarUint(encoder, MESSAGE_SYNC);
        syncProtocol.writeSyncStep1(encoder, d.doc);
        send(socket, encoding.toUint8Array(encoder));
        const states = [...d.awareness.getStates().keys()];
        if (states.length) send(socket, awarenessMessage(d, states));
        for (const data of queue.splice(0)) this.receive(d, client, data);
      },
      (e: unknown) => refuse(socket, e),
    );
  }

  private ownedByAnother(d: SharedDocument, client: Client, id: number): boolean {
    for (const other of d.clients.values()) if (other !== client && other.awarenessIds.has(id)) return true;
    return false;
  }

  private receive(d: SharedDocument, client: Client, data: Buffer): void {
    try {
      const decoder = decoding.createDecoder(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      const type = decoding.readVarUint(decoder);
      switch (type) {
        case MESSAGE_SYNC: {
          const syncType = decoding.readVarUint(decoder);
          if (syncType === syncProtocol.messageYjsSyncStep1) {
            const encoder = encoding.createEncoder();
            encoding.writeVarUint(encoder, MESSAGE_SYNC);
            syncProtocol.readSyncStep1(decoder, encoder, d.doc);
            send(client.socket, encoding.toUint8Array(encoder));
          } else if (syncType === syncProtocol.messageYjsSyncStep2 || syncType === syncProtocol.messageYjsUpdate) {
            // A viewer's changes are never applied, so never broadcast nor saved.
            if (!client.writable) {
              client.dropped++;
              return;
            }
            Y.applyUpdate(d.doc, decoding.readVarUint8Array(decoder), client.socket);
          } else throw new Error(`unknown sync message ${syncType}`);
          return;
        }
        case MESSAGE_AWARENESS: {
          if (data.byteLength > MAX_AWARENESS_BYTES) {
            refuse(client.socket, new DpError(413, 'awareness_update_too_large', `An awareness message may have ${MAX_AWARENESS_BYTES} bytes; this one had ${data.byteLength}`, { doc: d.rel, max_bytes: MAX_AWARENESS_BYTES }));
            return;
          }
          const entries = awarenessEntries(decoding.readVarUint8Array(decoder));
          // A socket speaks only for its own cursors: an update naming a client id another socket
          // (or the server) set would fake or clear someone else's presence, so it is dropped.
          if (entries.some(({ id }) => id === d.doc.clientID || this.ownedByAnother(d, client, id))) {
            client.dropped++;
            return;
          }
          // A socket speaks for a few client ids at most (a page has one per document); more are dropped.
          const ids = new Set(client.awarenessIds);
          const allowed = entries.filter(({ id }) => ids.has(id) || (ids.size < MAX_AWARENESS_IDS_PER_SOCKET && Boolean(ids.add(id))));
          this.relayAwareness(d, client, allowed.map((entry) => ({ ...entry, state: withServerUser(entry.state, client) })));
          return;
        }
        case MESSAGE_QUERY_AWARENESS:
          if (!this.withinAwarenessRate(client)) return;
          send(client.socket, awarenessMessage(d, [...d.awareness.getStates().keys()]));
          return;
        case MESSAGE_SAVE: {
          // Optional payload: a varString JSON {force: true} writes over a change made on disk meanwhile.
          const force = decoding.hasContent(decoder) && (JSON.parse(decoding.readVarString(decoder)) as { force?: unknown }).force === true;
          try {
            if (!client.writable) throw new DpError(403, 'insufficient_role', `Saving needs the 'write' permission; role '${client.caller.role}' does not have it`, { required_permission: 'write', role: client.caller.role });
            this.saveDocument(d, force).then(
              (result) => send(client.socket, encodeString(MESSAGE_SAVE, JSON.stringify(result))),
              (e: unknown) => send(client.socket, encodeString(MESSAGE_SAVE, JSON.stringify(this.saveError(d, e)))),
            );
          } catch (e) {
            send(client.socket, encodeString(MESSAGE_SAVE, JSON.stringify(this.saveError(d, e))));
          }
          return;
        }
        default:
          throw new Error(`unknown message type ${type}`);
      }
    } catch (e) {
      this.options.log.warn('collaboration message refused', { doc: d.rel, error: errorMessage(e) });
      refuse(client.socket, badRequest('invalid_collaboration_message', 'The message is not Yjs sync/awareness framing', { doc: d.rel }));
    }
  }

  /** True when `client` may send one more awareness message in the current second (and counts it). */
  private withinAwarenessRate(client: Client): boolean {
    const now = performance.now();
    if (now - client.awarenessWindowStart >= 1000) {
      client.awarenessWindowStart = now;
      client.awarenessInWindow = 0;
    }
    if (client.awarenessInWindow >= AWARENESS_PER_SECOND) return false;
    client.awarenessInWindow++;
    return true;
  }

  /**
   * Applies (and so relays) a socket's awareness entries, at most AWARENESS_PER_SECOND messages a
   * second: entries past the rate wait, the latest per client id, and are applied together when
   * the second ends, so a flood costs the others one message a second and the last cursor still
   * arrives.
   */
  private relayAwareness(d: SharedDocument, client: Client, entries: AwarenessEntry[]): void {
    if (entries.length === 0) return;
    if (!client.awarenessTimer && this.withinAwarenessRate(client)) {
      awarenessProtocol.applyAwarenessUpdate(d.awareness, encodeAwarenessEntries(entries), client.socket);
      return;
    }
    for (const entry of entries) client.awarenessPending.set(entry.id, entry);
    if (client.awarenessTimer) return;
    client.awarenessTimer = setTimeout(() => {
      client.awarenessTimer = null;
      const pending = [...client.awarenessPending.values()];
      client.awarenessPending.clear();
      if (d.clients.get(client.socket) !== client) return;
      client.awarenessWindowStart = performance.now();
      client.awarenessInWindow = 1;
      awarenessProtocol.applyAwarenessUpdate(d.awareness, encodeAwarenessEntries(pending), client.socket);
    }, Math.max(0, client.awarenessWindowStart + 1000 - performance.now()));
    client.awarenessTimer.unref();
  }

  private saveError(d: SharedDocument, e: unknown): unknown {
    if (isDpError(e)) return e.toBody();
    this.options.log.error('collaboration save failed', { doc: d.rel, error: errorMessage(e) });
    return { error: { code: 'internal_error', message: 'The save failed; the server log has details', details: {} } };
  }

  private leave(d: SharedDocument, client: Client): void {
    d.clients.delete(client.socket);
    if (client.awarenessTimer) clearTimeout(client.awarenessTimer);
    client.awarenessTimer = null;
    awarenessProtocol.removeAwarenessStates(d.awareness, [...client.awarenessIds], null);
    if (d.clients.size === 0) this.scheduleRelease(d);
  }

  private scheduleRelease(d: SharedDocument): void {
    if (d.clients.size > 0 || d.idleTimer) return;
    d.idleTimer = this.options.clock.setTimeout(() => void this.release(d), this.options.idleReleaseMs);
  }

  /**
   * Writes the merged document through the files service (atomically) when the file is still the
   * version the document was seeded from or last saved as; a change made on disk meanwhile (the
   * CLI, another tool) is a 409 `file_conflict` with nothing written, unless `force`.
   */
  private async saveDocument(d: SharedDocument, force = false): Promise<SaveResult> {
    const files = this.options.files();
    const content = d.text(await this.currentFile(d));
    const saved = files.write(d.rel, content, force ? {} : { baseSha256: d.baseSha256 });
    d.baseSha256 = saved.sha256;
    d.unsaved = false;
    this.options.log.info('collaboration document saved', { doc: d.rel });
    return { doc: d.rel, saved: true, sha256: saved.sha256, bytes: Buffer.byteLength(content) };
  }

  /** The file as it is on disk (for the notebook fields the document does not hold), or null. */
  private async currentFile(d: SharedDocument): Promise<string | null> {
    if (d.kind !== 'notebook') return null;
    // Read as the server itself: a notebook is code, never a masked data file.
    return this.options
      .files()
      .read(d.rel, LOCAL_ADMIN)
      .then((f) => f.content)
      .catch(() => null);
  }

  /** `POST /api/notebooks/collaborate/save`: saves an open document (`force`: over a change on disk). */
  save(doc: unknown, force = false): Promise<SaveResult> {
    const rel = this.checkDoc(doc);
    const d = this.loaded.get(rel);
    if (!d) throw notFound('document_not_open', `Nobody is editing '${rel}' together; save it through the files or notebooks API`, { doc: rel });
    return this.saveDocument(d, force);
  }

  /**
   * Releases an idle document: unsaved changes are saved when the file is still the version the
   * document was seeded from (or last saved as); when someone changed the file meanwhile, they
   * are discarded rather than written over that change.
   */
  async release(d: SharedDocument): Promise<Release | null> {
    if (d.idleTimer) this.options.clock.clearTimeout(d.idleTimer);
    d.idleTimer = null;
    if (d.clients.size > 0) return null;
    let outcome: Release = 'unchanged';
    if (d.unsaved) {
      try {
        const previous = await this.currentFile(d);
        // Someone joined while the file was read: the document stays.
        if (d.clients.size > 0) return null;
        const saved = this.options.files().write(d.rel, d.text(previous), { baseSha256: d.baseSha256 });
        d.baseSha256 = saved.sha256;
        d.unsaved = false;
        outcome = 'saved';
      } catch (e) {
        outcome = 'discarded';
        this.options.log.warn('collaboration changes discarded', { doc: d.rel, reason: isDpError(e) ? e.code : errorMessage(e) });
      }
    }
    this.documents.delete(d.rel);
    this.loaded.delete(d.rel);
    d.destroy();
    this.options.log.info('collaboration document released', { doc: d.rel, outcome });
    return outcome;
  }

  /** Shutdown: every socket closed, every document released as when idle. */
  async close(): Promise<void> {
    for (const d of [...this.loaded.values()]) {
      for (const socket of [...d.clients.keys()]) socket.close(1001, 'server stopping');
      d.clients.clear();
      await this.release(d);
    }
  }
}

function awarenessMessage(d: SharedDocument, clients: number[]): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MESSAGE_AWARENESS);
  encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(d.awareness, clients));
  return encoding.toUint8Array(encoder);
}

/** A refused socket: the error as a text frame, then close code 4000 + status (as the kernel refuses sockets). */
function refuse(socket: RouteSocket, e: unknown): void {
  const err = isDpError(e) ? e : new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details');
  send(socket, JSON.stringify(err.toBody()));
  socket.close(4000 + err.status, err.code);
}

/** The entries of an encoded awareness update (y-protocols' framing: count, then id, clock, state JSON each). */
function awarenessEntries(update: Uint8Array): AwarenessEntry[] {
  const decoder = decoding.createDecoder(update);
  const count = decoding.readVarUint(decoder);
  const entries: AwarenessEntry[] = [];
  for (let i = 0; i < count; i++) entries.push({ id: decoding.readVarUint(decoder), clock: decoding.readVarUint(decoder), state: decoding.readVarString(decoder) });
  return entries;
}

function encodeAwarenessEntries(entries: AwarenessEntry[]): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, entries.length);
  for (const { id, clock, state } of entries) {
    encoding.writeVarUint(encoder, id);
    encoding.writeVarUint(encoder, clock);
    encoding.writeVarString(encoder, state);
  }
  return encoding.toUint8Array(encoder);
}

/** A stable colour per user name (FNV-1a), so one person has the same colour in every document and tab. */
function colorOf(name: string): PeerUser['color'] {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return PEER_COLORS[(hash >>> 0) % PEER_COLORS.length];
}

/**
 * What others see of this socket: `user` is the server's, from the socket's caller (name, role,
 * colour), whatever the client sent. Without auth there is one local user: the page's own name is
 * kept (a string, cut to MAX_PEER_NAME), never its role or colour. A removal (`null`) stays.
 */
function withServerUser(state: string, client: Client): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(state);
  } catch {
    throw badRequest('invalid_collaboration_message', 'An awareness state is not JSON');
  }
  if (parsed === null) return state;
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw badRequest('invalid_collaboration_message', 'An awareness state is not a JSON object');
  const { caller } = client;
  const sent = (parsed as { user?: { name?: unknown } }).user?.name;
  const name = caller.authenticated && caller.username ? (caller.display_name || caller.username) : typeof sent === 'string' && sent.trim() ? sent.trim().slice(0, MAX_PEER_NAME) : 'local';
  const user: PeerUser = { name, role: caller.role, color: colorOf(caller.username ?? name) };
  return JSON.stringify({ ...(parsed as object), user });
}
