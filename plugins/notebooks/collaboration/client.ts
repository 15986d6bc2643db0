/**
 * A client of /ws/collaborate for the browser (the Notebooks page) and Node (tests, the
 * benchmark: pass the `ws` package's WebSocket). It keeps a Y.Doc and an Awareness in sync with
 * the server; no reconnection (a page opens a new client). Imports only npm packages and
 * protocol.ts, so the page's bundle and the server build share it.
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { MESSAGE_ACCESS, MESSAGE_AUTH, MESSAGE_AWARENESS, MESSAGE_QUERY_AWARENESS, MESSAGE_SAVE, MESSAGE_SYNC, type Access } from './protocol.js';

/** What the client needs of a WebSocket (the browser's and the `ws` package's both fit). */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array | string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type SocketFactory = (url: string) => SocketLike;

export interface CollaborationError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface CollaborationClientOptions {
  /** A shared Y.Doc to sync (default: a new one). */
  doc?: Y.Doc;
  /** Opens the socket (default: the global WebSocket). */
  socket?: SocketFactory;
  /** Sent as the first message, `{"token": ...}`, for clients that cannot send a cookie, a header or ?access_token=. */
  token?: string;
}

type Listener = () => void;

export class CollaborationClient {
  readonly doc: Y.Doc;
  readonly awareness: awarenessProtocol.Awareness;
  /** `read-only` for a viewer: its edits stay local, the server drops them. Null until the server said. */
  access: Access | null = null;
  /** True once the server's state arrived (sync step 2). */
  synced = false;
  /** Why the server refused or closed the socket. */
  error: CollaborationError | null = null;
  closed: { code: number; reason: string } | null = null;
  private readonly socket: SocketLike;
  private readonly listeners = new Set<Listener>();
  private readonly saves: Array<{ resolve(v: unknown): void; reject(e: unknown): void }> = [];

  constructor(url: string, options: CollaborationClientOptions = {}) {
    this.doc = options.doc ?? new Y.Doc();
    this.awareness = new awarenessProtocol.Awareness(this.doc);
    const open: SocketFactory = options.socket ?? ((u) => new WebSocket(u) as unknown as SocketLike);
    this.socket = open(url);
    this.socket.binaryType = 'arraybuffer';
    this.socket.onopen = () => {
      if (options.token) this.socket.send(JSON.stringify({ token: options.token }));
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MESSAGE_SYNC);
      syncProtocol.writeSyncStep1(encoder, this.doc);
      this.send(encoding.toUint8Array(encoder));
      if (this.awareness.getLocalState() !== null) this.sendAwareness([this.doc.clientID]);
    };
    this.socket.onmessage = (ev) => this.receive(ev.data);
    this.socket.onclose = (ev) => {
      this.closed = { code: ev.code, reason: ev.reason };
      awarenessProtocol.removeAwarenessStates(this.awareness, [...this.awareness.getStates().keys()].filter((id) => id !== this.doc.clientID), this);
      for (const s of this.saves.splice(0)) s.reject(new Error(`socket closed (${ev.code})`));
      this.changed();
    };
    this.socket.onerror = () => {};
    this.doc.on('update', this.onDocUpdate);
    this.awareness.on('update', this.onAwarenessUpdate);
  }

  private readonly onDocUpdate = (update: Uint8Array, origin: unknown) => {
    if (origin === this) return;
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MESSAGE_SYNC);
    syncProtocol.writeUpdate(encoder, update);
    this.send(encoding.toUint8Array(encoder));
  };

  private readonly onAwarenessUpdate = ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
    if (origin === this) return;
    this.sendAwareness([...added, ...updated, ...removed]);
  };

  private sendAwareness(clients: number[]) {
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MESSAGE_AWARENESS);
    encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(this.awareness, clients));
    this.send(encoding.toUint8Array(encoder));
  }

  private send(message: Uint8Array) {
    if (this.socket.readyState === 1) this.socket.send(message);
  }

  private receive(data: unknown) {
    if (typeof data === 'string') {
      // The server's refusal: {"error": {...}} before it closes the socket.
      try {
        this.error = (JSON.parse(data) as { error?: CollaborationError }).error ?? null;
      } catch {
        /* not ours */
      }
      this.changed();
      return;
    }
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data as Uint8Array);
    const decoder = decoding.createDecoder(bytes);
    const type = decoding.readVarUint(decoder);
    switch (type) {
      case MESSAGE_SYNC: {
        const encoder = encoding.createEncoder();
        encoding.writeVarUint(encoder, MESSAGE_SYNC);
        const syncType = syncProtocol.readSyncMessage(decoder, encoder, this.doc, this);
        if (encoding.length(encoder) > 1) this.send(encoding.toUint8Array(encoder));
        if (syncType === syncProtocol.messageYjsSyncStep2 && !this.synced) {
          this.synced = true;
          this.changed();
        }
        return;
      }
      case MESSAGE_AWARENESS:
        awarenessProtocol.applyAwarenessUpdate(this.awareness, decoding.readVarUint8Array(decoder), this);
        return;
      case MESSAGE_ACCESS:
        this.access = decoding.readVarString(decoder) as Access;
        this.changed();
        return;
      case MESSAGE_SAVE: {
        const result = JSON.parse(decoding.readVarString(decoder)) as { error?: CollaborationError };
        const pending = this.saves.shift();
        if (result.error) pending?.reject(Object.assign(new Error(result.error.message), { code: result.error.code, details: result.error.details }));
        else pending?.resolve(result);
        return;
      }
      case MESSAGE_AUTH:
      case MESSAGE_QUERY_AWARENESS:
      default:
        return;
    }
  }

  /**
   * Asks the server to save the document; resolves with `{doc, saved, sha256, bytes}`. Rejects
   * with `code: 'file_conflict'` when the file changed on disk since the document was opened or
   * last saved, unless `force` (write over that change).
   */
  save(options: { force?: boolean } = {}): Promise<{ doc: string; saved: true; sha256: string; bytes: number }> {
    return new Promise((resolve, reject) => {
      this.saves.push({ resolve: resolve as (v: unknown) => void, reject });
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MESSAGE_SAVE);
      if (options.force) encoding.writeVarString(encoder, JSON.stringify({ force: true }));
      this.send(encoding.toUint8Array(encoder));
    });
  }

  /** Calls `fn` whenever access, sync state, error or connection changes; returns the unsubscribe. */
  onChange(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed() {
    for (const fn of this.listeners) fn();
  }

  /** Resolves once synced (or rejects when the socket closes first). */
  whenSynced(): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.synced) {
          off();
          resolve();
        } else if (this.closed) {
          off();
          reject(Object.assign(new Error(this.error?.message ?? `socket closed (${this.closed.code})`), { code: this.error?.code ?? this.closed.reason, close: this.closed.code }));
        }
      };
      const off = this.onChange(check);
      check();
    });
  }

  destroy(): void {
    this.doc.off('update', this.onDocUpdate);
    this.awareness.off('update', this.onAwarenessUpdate);
    awarenessProtocol.removeAwarenessStates(this.awareness, [this.doc.clientID], 'local');
    this.socket.close();
    this.awareness.destroy();
  }
}
