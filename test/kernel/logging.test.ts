/**
 * The log sink (pino) as a deployment sees it: the real `dp serve` process, its stderr read
 * whole. Every request is logged with id, status and latency; no .env value reaches the output,
 * whether a plugin logs it or it arrives in a request URL.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { FIXTURE_PLUGINS, makeProject, runCli, spawnServe } from '../helpers.js';

const SECRET = 'pino-S3cret"with\\quote-4711';
const PLAIN = 'plainsecretvalue42';

describe('log sink', () => {
  it('dp serve logs each request as JSON with id, status and latency, and never a secret', async () => {
    const root = makeProject({
      'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  # live-demo serves its own static folder at /, where the ui plugin's shell would be.\n  disable: [ui]\n  paths: [${JSON.stringify(path.join(FIXTURE_PLUGINS, 'live-demo'))}]\n`,
      '.env': `API_SECRET='${SECRET}'\nOTHER=${PLAIN}\n`,
    });
    const served = await spawnServe(root, { args: ['--host', '127.0.0.1'], env: { DP_LOG_SILENT: '0' } });
    try {
      const { url } = served;
      assert.equal((await fetch(`${url}/api/live-demo/log`, { method: 'POST' })).status, 200);
      assert.equal((await fetch(`${url}/api/health?probe=${encodeURIComponent(PLAIN)}&access_token=${PLAIN}`)).status, 200);
      assert.equal((await fetch(`${url}/api/nope/${PLAIN}`)).status, 404);
      // An event stream (a hijacked reply) is logged when it closes, its token blanked.
      const stream = new AbortController();
      const sse = await fetch(`${url}/api/live-demo/events?access_token=${PLAIN}&token=${PLAIN}`, { signal: stream.signal });
      assert.equal(sse.status, 200);
      stream.abort();
      // The stream's line is written when the server sees it close.
      await served.output.waitFor(/"url":"\/api\/live-demo\/events\?access_token=\*\*\*/);
    } finally {
      await served.stop();
    }
    const stderr = served.output.stderr();
    const lines = stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const plugin = lines.find((l) => String(l.msg).startsWith('plugin log with secrets'));
    assert.ok(plugin, 'the plugin line was written (the check below is not vacuous)');
    assert.equal(plugin.scope, 'live-demo');
    assert.match(String(plugin.msg), /\*\*\*/);
    const requests = lines.filter((l) => l.msg === 'request');
    assert.ok(requests.length >= 3, stderr);
    for (const r of requests) {
      assert.match(String(r.reqId), /\S/);
      assert.equal(typeof r.status, 'number');
      assert.equal(typeof r.ms, 'number');
    }
    assert.deepEqual(
      requests.map((r) => [r.method, r.status]),
      [
        ['POST', 200],
        ['GET', 200],
        ['GET', 404],
        ['GET', 200],
      ],
    );
    assert.equal(requests[3].url, '/api/live-demo/events?access_token=***&token=***');
    for (const secret of [SECRET, JSON.stringify(SECRET).slice(1, -1), PLAIN]) assert.ok(!stderr.includes(secret), `${secret} leaked: ${stderr}`);
  });

  it('the CLI writes readable log lines to stderr, and DP_LOG_SILENT silences them', () => {
    const root = makeProject({ 'project.yml': 'name: ${LIMIT_FROM_ENV}\ndatabase:\n  path: t.duckdb\n' });
    const loud = runCli(['tables', '--project', root], { env: { DP_LOG_SILENT: '0', DP_LOG_LEVEL: 'debug' } });
    assert.match(loud.stderr, /^debug \[kernel\] project\.yml references \$\{LIMIT_FROM_ENV\}/m);
    assert.ok(!loud.stderr.includes('{"level"'), 'no JSON lines at the terminal');
    const quiet = runCli(['tables', '--project', root], { env: { DP_LOG_SILENT: '1', DP_LOG_LEVEL: 'debug' } });
    assert.doesNotMatch(quiet.stderr, /LIMIT_FROM_ENV/);
  });
});
