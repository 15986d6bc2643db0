// A prebuilt web UI page: plain ES module JavaScript, no build step. `react` and `@dp/ui` are
// bare imports the shell's import map resolves to the shell's own copies (one React).
// A page written in TSX would be bundled with those imports kept external (docs/ui.md, section 5).
import { createElement as h, useState } from 'react';
import { api, ErrorBox, Loading, PageHeader, Table, useApi, useSession } from '@dp/ui';
import { formatCount } from './format.js';

export default function LargestTablesPage({ page }) {
  const session = useSession();
  const [minRows, setMinRows] = useState(0);
  const tables = useApi((signal) => api.get('/api/ui-page-example/largest-tables', { signal }), []);
  const rows = (tables.data?.tables ?? []).filter((t) => t.row_estimate >= minRows);
  return h(
    'div',
    { className: 'ui-page-example' },
    h(PageHeader, { title: page.title, subtitle: `Project ${session.project.name}, as ${session.user.role}` },
      h('label', null, 'At least ', h('input', { type: 'number', min: 0, value: minRows, onChange: (e) => setMinRows(Number(e.target.value) || 0), 'aria-label': 'Minimum rows' }), ' rows'),
    ),
    h(ErrorBox, { error: tables.error, onRetry: tables.reload }),
    tables.data
      ? h(Table, {
          rows,
          rowKey: (t) => `${t.schema}.${t.name}`,
          columns: [
            { key: 'table', header: 'Table', render: (t) => `${t.schema}.${t.name}` },
            { key: 'rows', header: 'Rows (estimate)', align: 'right', render: (t) => formatCount(t.row_estimate) },
          ],
        })
      : h(Loading),
  );
}
