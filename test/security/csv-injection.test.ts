/**
 * Issue 28 point 12: the CSV export wrote cells starting with =, +, -, @ unescaped (formula
 * injection in spreadsheets). Text cells a spreadsheet would run as a formula (also those starting
 * with a tab or a carriage return, per OWASP) are prefixed with ' by default, on the route and in
 * `dp query --csv`; numbers keep their sign; `escape_formulas=false` / `--no-escape-formulas`
 * writes raw cells.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../helpers.js';

const SQL = `SELECT '=HYPERLINK("http://x")' AS a, '+1+2' AS b, '-2+3' AS c, '@SUM(A1)' AS d, chr(9) || '=1' AS e, chr(13) || '=1' AS f, -5 AS g, '-12.5' AS h, 'plain' AS i`;
const ESCAPED = `'=HYPERLINK(""http://x"")`;

describe('security: CSV formula injection', () => {
  let root: string;
  let s: TestServer;
  before(async () => {
    root = makeProject();
    s = await startServer(root);
  });
  after(async () => s.close());

  it('the export escapes formula-like text by default and writes it raw on request', async () => {
    const escaped = await s.request('POST', '/api/query/export-csv', { sql: SQL });
    assert.equal(escaped.status, 200, escaped.text);
    assert.equal(escaped.text.split('\r\n')[1], `"${ESCAPED}",'+1+2,'-2+3,'@SUM(A1),'\t=1,"'\r=1",-5,-12.5,plain`);
    const raw = await s.request('POST', '/api/query/export-csv?escape_formulas=false', { sql: SQL });
    assert.equal(raw.text.split('\r\n')[1], `"=HYPERLINK(""http://x"")",+1+2,-2+3,@SUM(A1),\t=1,"\r=1",-5,-12.5,plain`);
  });

  it('dp query --csv escapes the same cells, and --no-escape-formulas does not', async () => {
    await s.close();
    const escaped = await runInProcess(['query', '--project', root, '--csv', SQL]);
    assert.equal(escaped.code, 0, escaped.stderr);
    assert.match(escaped.stdout, /'\+1\+2,'-2\+3,'@SUM\(A1\)/);
    const raw = await runInProcess(['query', '--project', root, '--csv', '--no-escape-formulas', SQL]);
    assert.equal(raw.code, 0, raw.stderr);
    assert.match(raw.stdout, /,\+1\+2,-2\+3,@SUM\(A1\),/);
    await closeInProcessClis();
    s = await startServer(root);
  });
});
