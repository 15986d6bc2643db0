/**
 * @dp/ui/editor: CodeMirror 6 editors. SqlEditor completes schemas, tables and columns from
 * /api/autocomplete, runs on Ctrl/Cmd+Enter and marks an error's line.
 */
import { useEffect, useRef } from 'react';
import { basicSetup } from 'codemirror';
import { closeCompletion, type Completion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { sql, PostgreSQL, type SQLNamespace } from '@codemirror/lang-sql';
import { Compartment, EditorState, StateEffect, StateField, type Extension } from '@codemirror/state';
import { Decoration, EditorView, keymap, type DecorationSet } from '@codemirror/view';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { tags } from '@lezer/highlight';
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
  /** Receives a handle to insert text at the cursor (a catalog panel's click), and null on unmount. */
  onReady?: (handle: EditorHandle | null) => void;
}

/** What a page may do to a mounted editor besides setting its whole text. */
export interface EditorHandle {
  /** Replaces the selection (or inserts at the cursor) with `text`, and focuses the editor. */
  insert(text: string): void;
  focus(): void;
  /** Saves through the editor's own path (a shared document's socket save), when it has one. */
  save?(): void;
}

/** Marks a 1-based line as the error's (null clears it); needs `errorLineField` in the editor. */
export const setErrorLine = StateEffect.define<number | null>();
export const errorLineField = StateField.define<DecorationSet>({
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

/** `schema.table` or `table` references after FROM or JOIN in one statement, each with its alias when it has one. */
const TABLE_REF = /\b(?:from|join)\s+((?:"[^"]+"|[A-Za-z_][\w$]*)(?:\.(?:"[^"]+"|[A-Za-z_][\w$]*)){0,2})(?:\s+(?:as\s+)?("[^"]+"|[A-Za-z_][\w$]*))?/gi;
const NOT_ALIAS = new Set(['where', 'group', 'order', 'limit', 'join', 'left', 'right', 'inner', 'outer', 'full', 'cross', 'on', 'using', 'union', 'having', 'window', 'qualify', 'offset', 'natural', 'positional', 'asof', 'semi', 'anti', 'lateral', 'except', 'intersect']);

/** The statement around `pos`: the text between the semicolons before and after it. */
function statementAt(doc: string, pos: number): string {
  const start = doc.lastIndexOf(';', pos - 1) + 1;
  const end = doc.indexOf(';', pos);
  return doc.slice(start, end < 0 ? doc.length : end);
}

function unquote(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1) : name;
}

/**
 * The columns of the tables a statement reads, for completing a bare column name (`SELECT
 * cust|`), which lang-sql's schema completion only offers after a table name and a dot. Each
 * option says its table; a name two tables share is offered once per table.
 */
export function columnsInScope(statement: string, ns: SQLNamespace): Array<{ column: string; table: string; alias: string | null }> {
  const catalog = ns as Record<string, Record<string, string[]>>;
  const out: Array<{ column: string; table: string; alias: string | null }> = [];
  for (const m of statement.matchAll(TABLE_REF)) {
    const parts = m[1].split('.').map(unquote);
    const alias = m[2] && !NOT_ALIAS.has(m[2].toLowerCase()) ? unquote(m[2]) : null;
    const [schema, table] = parts.length >= 2 ? parts.slice(-2) : [null, parts[0]];
    const schemas = schema ? [schema] : Object.keys(catalog).filter((s) => Array.isArray(catalog[s]?.[table]));
    for (const s of schemas) {
      const columns = catalog[s]?.[table];
      if (Array.isArray(columns)) for (const column of columns) out.push({ column, table: `${s}.${table}`, alias });
    }
  }
  return out;
}

/** A completion source offering the in-scope columns for a bare word (not after a dot). */
function bareColumnCompletion(ns: SQLNamespace) {
  return (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/[A-Za-z_][\w$]*/);
    const from = word ? word.from : context.pos;
    if (!word && !context.explicit) return null;
    if (context.state.sliceDoc(from - 1, from) === '.') return null;
    const doc = context.state.doc.toString();
    const seen = new Set<string>();
    const options: Completion[] = [];
    for (const c of columnsInScope(statementAt(doc, context.pos), ns)) {
      const key = `${c.column}\u0000${c.table}`;
      if (seen.has(key)) continue;
      seen.add(key);
      options.push({ label: c.column, type: 'property', detail: c.alias ? `${c.alias} · ${c.table}` : c.table, boost: 5 });
    }
    return options.length ? { from, options, validFor: /^[\w$]*$/ } : null;
  };
}

/** SQL highlighting and completion: lang-sql's (keywords, `schema.table.column` of `ns`) and bare columns in scope. */
export function sqlSupport(ns?: SQLNamespace): Extension {
  const lang = sql({ dialect: PostgreSQL, schema: ns, upperCaseKeywords: true });
  return [lang, ns ? lang.language.data.of({ autocomplete: bareColumnCompletion(ns) }) : []];
}

/**
 * Ctrl/Cmd+Enter (and Shift+Enter) runs: the selection when there is one, else the whole text.
 * `getRun` is read at each key press, so a page's latest handler runs; without one the key falls through.
 */
export function runKeymap(getRun: () => ((text: string) => void) | undefined): Extension {
  const runKey = (v: EditorView) => {
    const onRun = getRun();
    if (!onRun) return false;
    closeCompletion(v);
    const sel = v.state.selection.main;
    onRun(sel.empty ? v.state.doc.toString() : v.state.sliceDoc(sel.from, sel.to));
    return true;
  };
  return keymap.of([
    { key: 'Mod-Enter', run: runKey, preventDefault: true },
    { key: 'Shift-Enter', run: runKey },
  ]);
}

/**
 * What every dp code editor has: Ctrl/Cmd+Enter runs and Ctrl/Cmd+S saves (each when its getter
 * gives a handler, read at the key press), CodeMirror's basic setup, dp's look and colours, the error line.
 */
export function editorBasics(getRun: () => ((text: string) => void) | undefined, getSave: () => (() => void) | undefined): Extension {
  const save = () => {
    const onSave = getSave();
    if (!onSave) return false;
    onSave();
    return true;
  };
  return [runKeymap(getRun), keymap.of([{ key: 'Mod-s', run: save, preventDefault: true }]), basicSetup, editorTheme, editorHighlight, errorLineField];
}

/** A page's handle on a mounted editor; inserting does nothing in a read-only one. */
export function editorHandle(v: EditorView, save?: () => void): EditorHandle {
  return {
    insert(text) {
      if (v.state.readOnly) return;
      const sel = v.state.selection.main;
      v.dispatch({ changes: { from: sel.from, to: sel.to, insert: text }, selection: { anchor: sel.from + text.length }, scrollIntoView: true });
      v.focus();
    },
    focus: () => v.focus(),
    save,
  };
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
  '.cm-tooltip-autocomplete > ul > li[aria-selected]': { backgroundColor: 'var(--dp-accent)', color: 'var(--dp-accent-fg)' },
  '.cm-completionDetail': { color: 'var(--dp-fg-muted)', marginLeft: '0.6em' },
  '.cm-matchingBracket': { backgroundColor: 'var(--dp-selection)', color: 'inherit' },
});

/**
 * Syntax colours from the shell's CSS variables (`--dp-syn-*`, light and dark values), so the
 * dark theme keeps readable contrast; CodeMirror's default style is for light backgrounds only.
 */
export const editorHighlight = syntaxHighlighting(
  HighlightStyle.define([
    { tag: [tags.keyword, tags.operatorKeyword, tags.modifier], color: 'var(--dp-syn-keyword)', fontWeight: '600' },
    { tag: [tags.string, tags.special(tags.string)], color: 'var(--dp-syn-string)' },
    { tag: [tags.number, tags.bool, tags.null, tags.atom], color: 'var(--dp-syn-number)' },
    { tag: [tags.comment, tags.lineComment, tags.blockComment], color: 'var(--dp-syn-comment)', fontStyle: 'italic' },
    { tag: [tags.typeName, tags.standard(tags.name), tags.function(tags.variableName)], color: 'var(--dp-syn-type)' },
    { tag: [tags.special(tags.name), tags.propertyName, tags.labelName], color: 'var(--dp-syn-name)' },
    { tag: [tags.operator, tags.punctuation, tags.bracket], color: 'var(--dp-fg-muted)' },
    { tag: tags.invalid, color: 'var(--dp-bad)' },
  ]),
);

export function CodeEditor({ value, onChange, onRun, onSave, language = 'sql', errorLine = null, readOnly = false, schema, height = '100%', ariaLabel = 'Editor', onReady }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const handlers = useRef({ onChange, onRun, onSave });
  handlers.current = { onChange, onRun, onSave };
  const langSlot = useRef(new Compartment());
  const readOnlySlot = useRef(new Compartment());
  const readyRef = useRef(onReady);
  readyRef.current = onReady;

  useEffect(() => {
    const extensions: Extension[] = [
      editorBasics(() => handlers.current.onRun, () => handlers.current.onSave),
      langSlot.current.of([]),
      readOnlySlot.current.of(EditorState.readOnly.of(readOnly)),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) handlers.current.onChange?.(u.state.doc.toString());
      }),
      EditorView.contentAttributes.of({ 'aria-label': ariaLabel }),
    ];
    const v = new EditorView({ parent: host.current!, state: EditorState.create({ doc: value, extensions }) });
    view.current = v;
    readyRef.current?.(editorHandle(v));
    return () => {
      readyRef.current?.(null);
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
      view.current.dispatch({ effects: langSlot.current.reconfigure(language === 'sql' ? sqlSupport(ns) : []) });
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
