/**
 * Renders the markdown dp writes itself (the wiki pages and the generated docs) with
 * react-markdown and GitHub-flavoured tables (remark-gfm). It builds React elements and never
 * renders raw HTML (no rehype-raw), and its URL filter drops `javascript:` links, so nothing in a
 * page (a model description, a metric filter) can inject markup or script.
 */
import type { ReactNode } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';

/** The id a heading gets (for in-page links and tests). */
export function headingId(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** The plain text of a heading's children, for its id. */
function textOf(node: ReactNode): string {
  if (typeof node === 'string' || typeof node === 'number') return String(node);
  if (Array.isArray(node)) return node.map(textOf).join('');
  if (node && typeof node === 'object' && 'props' in node) return textOf((node as { props: { children?: ReactNode } }).props.children);
  return '';
}

const heading =
  (Tag: 'h1' | 'h2' | 'h3' | 'h4' | 'h5' | 'h6') =>
  ({ children }: { children?: ReactNode }) => <Tag id={headingId(textOf(children))}>{children}</Tag>;

// One level down: the page's own title is the shell's h1, so a document's `#` is an h2.
const components: Components = {
  h1: heading('h2'),
  h2: heading('h3'),
  h3: heading('h4'),
  h4: heading('h5'),
  h5: heading('h6'),
  h6: heading('h6'),
  pre: ({ children }) => <pre className="dp-code">{children}</pre>,
  table: ({ children }) => (
    <div className="dp-table-wrap">
      <table className="dp-table">{children}</table>
    </div>
  ),
  a: ({ href, children }) => (
    <a href={href} target={href && /^https?:/.test(href) ? '_blank' : undefined} rel="noreferrer">
      {children}
    </a>
  ),
};

export function Markdown({ text }: { text: string }) {
  return (
    <div className="dp-markdown">
      <ReactMarkdown remarkPlugins={[remarkGfm]} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
