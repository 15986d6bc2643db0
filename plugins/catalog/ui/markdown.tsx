/**
 * Renders the markdown dp writes itself (the wiki pages and the generated docs) as React elements:
 * headings, paragraphs, lists, tables, fenced code, inline code, bold, links. Text becomes text
 * nodes, never HTML, so nothing in a page (a model description, a metric filter) can inject
 * markup. No markdown package is installed in this repository (see the catalog README); this
 * covers the subset those documents use and shows anything else as plain text.
 */
import { Fragment, type ReactNode } from 'react';

/** Inline: `code`, **bold**, [text](url) (http, https, relative and #anchors only). */
function inline(text: string, key: string): ReactNode[] {
  const out: ReactNode[] = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let n = 0;
  for (const m of text.matchAll(re)) {
    if (m.index! > last) out.push(text.slice(last, m.index));
    const k = `${key}-${n++}`;
    if (m[1] !== undefined) out.push(<code key={k}>{m[1]}</code>);
    else if (m[2] !== undefined) out.push(<strong key={k}>{m[2]}</strong>);
    else {
      const href = m[4]!;
      const safe = /^(https?:\/\/|\/|#|\.{0,2}\/?[\w.-])/.test(href) && !/^\s*javascript:/i.test(href);
      out.push(safe ? <a key={k} href={href} target={/^https?:/.test(href) ? '_blank' : undefined} rel="noreferrer">{m[3]}</a> : m[3]);
    }
    last = m.index! + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const cells = (row: string) =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));

/** The id a heading gets (for in-page links and tests). */
export function headingId(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export function Markdown({ text }: { text: string }) {
  const lines = text.split('\n');
  const blocks: ReactNode[] = [];
  let i = 0;
  let b = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const key = `b${b++}`;
    const fence = /^```(\w*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.startsWith('```')) body.push(lines[i++]!);
      i++;
      blocks.push(
        <pre key={key} className="dp-code" data-language={fence[1] || undefined}>
          <code>{body.join('\n')}</code>
        </pre>,
      );
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min(heading[1]!.length + 1, 6);
      const H = `h${level}` as 'h2';
      blocks.push(
        <H key={key} id={headingId(heading[2]!)}>
          {inline(heading[2]!, key)}
        </H>,
      );
      i++;
      continue;
    }
    if (/^\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\|[\s:|-]+\|\s*$/.test(lines[i + 1]!)) {
      const header = cells(line);
      const rows: string[][] = [];
      i += 2;
      while (i < lines.length && /^\|.*\|\s*$/.test(lines[i]!)) rows.push(cells(lines[i++]!));
      blocks.push(
        <div key={key} className="dp-table-wrap">
          <table className="dp-table">
            <thead>
              <tr>
                {header.map((h, j) => (
                  <th key={j}>{inline(h, `${key}h${j}`)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r, j) => (
                <tr key={j}>
                  {r.map((c, k) => (
                    <td key={k}>{inline(c, `${key}r${j}c${k}`)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>,
      );
      continue;
    }
    if (/^\s*[-*]\s+/.test(line)) {
      const items: string[] = [];
      while (i < lines.length && (/^\s*[-*]\s+/.test(lines[i]!) || (/^\s{2,}\S/.test(lines[i]!) && items.length))) {
        if (/^\s*[-*]\s+/.test(lines[i]!)) items.push(lines[i]!.replace(/^\s*[-*]\s+/, ''));
        else items[items.length - 1] += ' ' + lines[i]!.trim();
        i++;
      }
      blocks.push(
        <ul key={key}>
          {items.map((it, j) => (
            <li key={j}>{inline(it, `${key}i${j}`)}</li>
          ))}
        </ul>,
      );
      continue;
    }
    if (/^\d+\.\s+/.test(line)) {
      const items: string[] = [];
      while (i < lines.length && (/^\d+\.\s+/.test(lines[i]!) || (/^\s{2,}\S/.test(lines[i]!) && items.length))) {
        if (/^\d+\.\s+/.test(lines[i]!)) items.push(lines[i]!.replace(/^\d+\.\s+/, ''));
        else items[items.length - 1] += ' ' + lines[i]!.trim();
        i++;
      }
      blocks.push(
        <ol key={key}>
          {items.map((it, j) => (
            <li key={j}>{inline(it, `${key}i${j}`)}</li>
          ))}
        </ol>,
      );
      continue;
    }
    if (!line.trim()) {
      i++;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i]!.trim() && !/^(#{1,6}\s|```|\|.*\|\s*$|\s*[-*]\s+|\d+\.\s+)/.test(lines[i]!)) para.push(lines[i++]!.trim());
    blocks.push(<p key={key}>{inline(para.join(' '), key)}</p>);
  }
  return <div className="dp-markdown">{blocks.map((x, j) => <Fragment key={j}>{x}</Fragment>)}</div>;
}
