/**
 * @dp/ui/editor: CodeMirror 6 editors. SqlEditor completes schemas, tables and columns from
 * /api/autocomplete, runs on Ctrl/Cmd+Enter and marks an error's line.
 */
import { useEffect, useRef } from 'react';
import { basicSetup } from 'codemirror';
import { closeCompletion } from '@codemirror/autocomplete';
import { sql, PostgreSQL, type SQLNamespace } from '@codemirror/lang-sql';
import { Compartment, EditorState, StateEffect, StateField, type Extension } from '@codemirror/state';
import { Decoration, EditorView, keymap, type DecorationSet } from '@codemirror/view';
import { api } from './api';

export type EditorLanguage = 'sql' | 'text';

export interface CodeEditorProps {
  value: string;
  onChange?: (value: string) => void;
  /** Ctrl/Cmd+Enter (and Shift+Enter): run. Receives the selection when there is one, else the whole text. */
  onRun?: (text: string) => void;
  /** Ctrl/Cmd+S: save. */
  onSave?: () => void;
  language?: EditorLanguage;
  /** 1-based line to mark as the error's. */
  errorLine?: number | null;
  readOnly?: boolean;
  /** Completion namespace for SQL (defaults to the catalog from /api/autocomplete). */
  schema?: SQLNamespace;
  height?: string;
  ariaLabel?: string;
}

const setErrorLine = StateEffect.define<number | null>();
const errorLineField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (!e.is(setErrorLine)) continue;
      const n = e.value;
      if (!n || n < 1 || n > tr.state.doc.lines) return Decoration.none;
      const line = tr.state.doc.line(n);
      return Decoration.set([Decoration.line({ class: 'cm-dp-error-line' }).range(line.from)]);
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

let catalogPromise: Promise<SQLNamespace> | null = null;

/** The completion namespace from /api/autocomplete (`schema.table` → columns), fetched once per page load. */
export function loadSqlCatalog(refresh = false): Promise<SQLNamespace> {
  if (!catalogPromise || refresh) {
    catalogPromise = api
      .get<{ tables: Array<{ schema: string; name: string; columns: Array<{ name: string; type: string }> }> }>('/api/autocomplete')
      .then((c) => {
        const ns: Record<string, Record<string, string[]>> = {};
        for (const t of c.tables) (ns[t.schema] ??= {})[t.name] = t.columns.map((col) => col.name);
        return ns as SQLNamespace;
      })
      .catch(() => {
        catalogPromise = null;
        return {} as SQLNamespace;
      });
  }
  return catalogPromise;
}

/** dp's editor look (colours from the page's CSS variables); a theme, so it beats CodeMirror's own (adopted-styles.ts). */
export const editorTheme = EditorView.theme({
  '&': { height: '100%', fontSize: '13px', backgroundColor: 'var(--dp-bg-input)', color: 'var(--dp-fg)' },
  '.cm-scroller': { fontFamily: 'var(--dp-mono)' },
  '.cm-gutters': { backgroundColor: 'var(--dp-bg-soft)', color: 'var(--dp-fg-muted)', borderRight: '1px solid var(--dp-border)' },
  '.cm-activeLine': { backgroundColor: 'var(--dp-active-line)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--dp-active-line)' },
  '.cm-dp-error-line': { backgroundColor: 'var(--dp-error-line)' },
  '.cm-cursor': { borderLeftColor: 'var(--dp-fg)' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection': { backgroundColor: 'var(--dp-selection) !important' },
  '.cm-tooltip': { backgroundColor: 'var(--dp-bg-soft)', color: 'var(--dp-fg)', border: '1px solid var(--dp-border)' },
});

export function CodeEditor({ value, onChange, onRun, onSave, language = 'sql', errorLine = null, readOnly = false, schema, height = '100%', ariaLabel = 'Editor' }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const handlers = useRef({ onChange, onRun, onSave });
  handlers.current = { onChange, onRun, onSave };
  const langSlot = useRef(new Compartment());
  const readOnlySlot = useRef(new Compartment());

  useEffect(() => {
    const runKey = (v: EditorView) => {
      if (!handlers.current.onRun) return false;
      closeCompletion(v);
      const sel = v.state.selection.main;
      handlers.current.onRun(sel.empty ? v.state.doc.toString() : v.state.sliceDoc(sel.from, sel.to));
      return true;
    };
    const extensions: Extension[] = [
      keymap.of([
        { key: 'Mod-Enter', run: runKey, preventDefault: true },
        { key: 'Shift-Enter', run: runKey },
        {
          key: 'Mod-s',
          run: () => {
            if (!handlers.current.onSave) return false;
            handlers.current.onSave();
            return true;
          },
          preventDefault: true,
        },
      ]),
      basicSetup,
      editorTheme,
      errorLineField,
      langSlot.current.of([]),
      readOnlySlot.current.of(EditorState.readOnly.of(readOnly)),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) handlers.current.onChange?.(u.state.doc.toString());
      }),
      EditorView.contentAttributes.of({ 'aria-label': ariaLabel }),
    ];
    const v = new EditorView({ parent: host.current!, state: EditorState.create({ doc: value, extensions }) });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // The editor is created once; props flow in through the effects below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // The language (and SQL completion namespace).
  useEffect(() => {
    let cancelled = false;
    const apply = (ns: SQLNamespace | undefined) => {
      if (cancelled || !view.current) return;
      const ext = language === 'sql' ? sql({ dialect: PostgreSQL, schema: ns, upperCaseKeywords: true }) : [];
      view.current.dispatch({ effects: langSlot.current.reconfigure(ext) });
    };
    apply(schema);
    if (language === 'sql' && !schema) void loadSqlCatalog().then(apply);
    return () => {
      cancelled = true;
    };
  }, [language, schema]);

  useEffect(() => {
    view.current?.dispatch({ effects: readOnlySlot.current.reconfigure(EditorState.readOnly.of(readOnly)) });
  }, [readOnly]);

  // Outside changes (a file loaded, a history entry picked) replace the text.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    view.current?.dispatch({ effects: setErrorLine.of(errorLine) });
  }, [errorLine, value]);

  return <div className="dp-editor" ref={host} style={{ height }} data-testid="code-editor" />;
}

/** The SQL editor: a CodeEditor in SQL mode. */
export function SqlEditor(props: Omit<CodeEditorProps, 'language'>) {
  return <CodeEditor {...props} language="sql" ariaLabel={props.ariaLabel ?? 'SQL editor'} />;
}

export { CollaborativeEditor, editsTogether, usePeers, type CollaborativeEditorProps, type Peer } from './collab-editor';
export { collaborationExtensions, peerClass } from './peer-selections';
