/**
 * CollaborativeEditor: one project file edited together, the way notebooks are. The editor joins
 * the file's shared document on /ws/collaborate (a Y.Text `content`), shows who else is in it and
 * their cursors and selections, and saves through the socket (the same save as notebooks: atomic,
 * through the files service). A viewer (or a page told `readOnly`) sees every edit live and cannot
 * change the text. A save over a change made on disk meanwhile (the CLI, another tool) is refused
 * by the server (409 file_conflict) and shown here with the two ways out: load the file from disk
 * into the shared document, or write ours over it. In SQL mode it completes from the catalog like
 * SqlEditor, and a page may give it what the SQL page needs: `onRun` (Ctrl/Cmd+Enter), the error
 * line, the text as it changes (`onChange`) and a handle (insert at the cursor, focus, save).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { CollaborationClient } from '../../notebooks/collaboration/client';
import { TEXT_CONTENT } from '../../notebooks/collaboration/protocol';
import { api, seg } from './api';
import { Badge, ErrorBox, Loading } from './components';
import { editorBasics, editorHandle, loadSqlCatalog, setErrorLine, sqlSupport, type EditorHandle } from './editor';
import { collaborationExtensions, peerClass } from './peer-selections';
import { useSession } from './session';
import './collab.css';

export interface CollaborativeEditorProps {
  /** Project-relative path of the file. */
  path: string;
  language?: 'sql' | 'text';
  /** True when the caller may not write (the server also joins viewers read-only). */
  readOnly?: boolean;
  /** After a save, with the file's new sha256. */
  onSaved?: (sha256: string) => void;
  height?: number | string;
  ariaLabel?: string;
  /** Ctrl/Cmd+Enter (and Shift+Enter): run the selection, else the whole text. */
  onRun?: (text: string) => void;
  /** The shared text when the editor opens and after every change (its own or a collaborator's). */
  onChange?: (text: string) => void;
  /** 1-based line to mark as the error's. */
  errorLine?: number | null;
  /** Receives a handle (insert at the cursor, focus, save) once the editor is up, and null when it goes. */
  onReady?: (handle: EditorHandle | null) => void;
}

/** Another person in the document (awareness `user`, set by the server). */
export interface Peer {
  id: number;
  name: string;
  role: string;
  colorClass: string;
}

type SaveState = { saving: true } | { savedAt: string } | { error: unknown } | null;

/**
 * True for a file this editor can share: the text files a save may write (the files plugin's
 * SAVEABLE_EXTENSIONS without `.dpnb`, which the Notebooks page edits as cells). Others are
 * refused by /ws/collaborate and are shown read-only by the page.
 */
export const editsTogether = (path: string) => /\.(sql|py|ya?ml|sqlfluff|ts|js|mjs)$/i.test(path);

const socketUrl = (path: string) => `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/collaborate?doc=${encodeURIComponent(path)}`;

/** The other people in a shared document, re-rendered as they come, go and move. */
export function usePeers(client: CollaborationClient): Peer[] {
  const [peers, setPeers] = useState<Peer[]>([]);
  useEffect(() => {
    const update = () =>
      setPeers(
        [...client.awareness.getStates().entries()]
          .filter(([id, state]) => id !== client.doc.clientID && (state as { user?: unknown }).user)
          .map(([id, state]) => {
            const user = (state as { user: { name?: unknown; role?: unknown; color?: unknown } }).user;
            return { id, name: String(user.name ?? 'someone'), role: String(user.role ?? ''), colorClass: peerClass(user.color) };
          }),
      );
    update();
    client.awareness.on('change', update);
    return () => client.awareness.off('change', update);
  }, [client]);
  return peers;
}

export function CollaborativeEditor({ path, language = 'text', readOnly = false, onSaved, height = 300, ariaLabel = 'File editor', onRun, onChange, errorLine = null, onReady }: CollaborativeEditorProps) {
  const session = useSession();
  const client = useMemo(() => new CollaborationClient(socketUrl(path)), [path]);
  const [, setVersion] = useState(0);
  const [dirty, setDirty] = useState(false);
  const [save, setSave] = useState<SaveState>(null);
  const host = useRef<HTMLDivElement>(null);
  const saveRef = useRef<(force?: boolean) => void>(() => {});
  const peers = usePeers(client);
  const handlers = useRef({ onRun, onChange, onReady });
  handlers.current = { onRun, onChange, onReady };
  const view = useRef<EditorView | null>(null);
  const langSlot = useRef(new Compartment());

  useEffect(() => {
    // The server shows its own name, role and colour for this socket; the name here is for a server without auth.
    client.awareness.setLocalStateField('user', { name: session.user.display_name || session.user.username || 'local' });
    const off = client.onChange(() => setVersion((v) => v + 1));
    return () => {
      off();
      client.destroy();
    };
  }, [client, session.user.display_name, session.user.username]);

  const writable = client.access === 'read-write' && !readOnly;
  const text = client.doc.getText(TEXT_CONTENT);

  useEffect(() => {
    const markDirty = () => setDirty(true);
    text.observe(markDirty);
    return () => text.unobserve(markDirty);
  }, [text]);

  saveRef.current = (force = false) => {
    if (!writable) return;
    setSave({ saving: true });
    client.save({ force }).then(
      (r) => {
        setDirty(false);
        setSave({ savedAt: new Date().toLocaleTimeString() });
        onSaved?.(r.sha256);
      },
      (e: unknown) => setSave({ error: e }),
    );
  };

  /** "Load theirs": the file as it is on disk replaces the shared text (for everyone), then is saved as the new base. */
  const loadFromDisk = async () => {
    try {
      const file = await api.get<{ content: string }>(`/api/files/${path.split('/').map(seg).join('/')}`);
      client.doc.transact(() => {
        text.delete(0, text.length);
        text.insert(0, file.content);
      });
      saveRef.current(true);
    } catch (e) {
      setSave({ error: e });
    }
  };

  useEffect(() => {
    if (!client.synced || !host.current) return;
    const extensions: Extension[] = [
      editorBasics(() => handlers.current.onRun, () => saveRef.current),
      EditorView.lineWrapping,
      collaborationExtensions(text, client.awareness),
      langSlot.current.of(language === 'sql' ? sqlSupport() : []),
      EditorState.readOnly.of(!writable),
      EditorView.editable.of(writable),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) handlers.current.onChange?.(u.state.doc.toString());
      }),
      EditorView.contentAttributes.of({ 'aria-label': ariaLabel }),
    ];
    const v = new EditorView({ parent: host.current, state: EditorState.create({ doc: text.toString(), extensions }) });
    view.current = v;
    setDirty(false);
    handlers.current.onChange?.(v.state.doc.toString());
    handlers.current.onReady?.(editorHandle(v, () => saveRef.current()));
    // SQL completion from the catalog once it is read (the same namespace SqlEditor uses).
    let gone = false;
    if (language === 'sql') void loadSqlCatalog().then((ns) => !gone && v.dispatch({ effects: langSlot.current.reconfigure(sqlSupport(ns)) }));
    return () => {
      gone = true;
      handlers.current.onReady?.(null);
      view.current = null;
      v.destroy();
    };
  }, [client, client.synced, text, language, writable, ariaLabel]);

  useEffect(() => {
    view.current?.dispatch({ effects: setErrorLine.of(errorLine) });
  }, [errorLine, client.synced]);

  const conflict = save && 'error' in save && (save.error as { code?: string }).code === 'file_conflict';
  const live = client.synced && !client.closed;

  return (
    <div className="dp-col dp-collab-editor" data-testid="collab-editor" data-doc={path}>
      <div className="dp-row dp-collab-bar">
        <code>{path}</code>
        {live ? (
          <Badge tone="ok">live</Badge>
        ) : client.closed ? (
          <Badge tone="bad">disconnected</Badge>
        ) : (
          <Badge tone="neutral">connecting</Badge>
        )}
        {client.access === 'read-only' || readOnly ? <Badge tone="neutral">read-only</Badge> : null}
        {dirty ? <Badge tone="warn">unsaved</Badge> : save && 'savedAt' in save ? <Badge tone="ok">saved {save.savedAt}</Badge> : null}
        <span className="dp-collab-peers" aria-label="Also here" data-testid="collab-peers">
          {peers.map((p) => (
            <span key={p.id} className={`dp-collab-peer ${p.colorClass}`} title={p.role ? `${p.name} (${p.role})` : p.name}>
              {p.name}
            </span>
          ))}
        </span>
        <div className="dp-toolbar dp-collab-actions">
          <button type="button" className="dp-btn dp-btn-primary" disabled={!writable || !live || (save !== null && 'saving' in save)} onClick={() => saveRef.current()} title={writable ? 'Save (Ctrl/Cmd+S)' : 'Needs the editor role'}>
            Save
          </button>
        </div>
      </div>
      {client.error ? <ErrorBox error={Object.assign(new Error(client.error.message), client.error)} /> : null}
      {conflict ? (
        <div className="dp-error" role="alert" data-testid="collab-conflict">
          <strong>The file changed on disk since it was opened here; nothing was saved.</strong>
          <button type="button" className="dp-btn dp-btn-small" onClick={() => void loadFromDisk()}>
            Load the file from disk (drop ours)
          </button>
          <button type="button" className="dp-btn dp-btn-small" onClick={() => saveRef.current(true)}>
            Overwrite with ours
          </button>
        </div>
      ) : save && 'error' in save ? (
        <ErrorBox error={save.error} />
      ) : null}
      <div className="dp-collab-host" style={{ height }}>
        {client.synced ? null : <Loading />}
        <div className="dp-editor dp-collab-code" ref={host} />
      </div>
    </div>
  );
}
