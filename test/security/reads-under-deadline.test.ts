/**
 * Every read a viewer can start runs in a query slot of their role, under its deadline, and
 * stops when the client leaves (issue 28 point 6): the version diff, table and model profiles
 * source freshness and the catalog's row counts (overview, sources, docs) all compare or
 * aggregate whole tables. With one viewer slot held by a
 * long viewer query, each such request must wait for the slot (seen in the runner's stats)
 * instead of running beside it, and one whose client leaves must leave the queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject } from '../helpers.js';
import { startServerWithRoles, type RoleServer } from '../support/role-server.js';

const LONG_SQL = 'SELECT sum(i) FROM range(10000000000000) t(i)';

describe('security: whole-table reads under the role deadline and slots', () => {
  let r: RoleServer;
  let version: string;
  const stats = () => r.s.app.queries.stats() as { running: Record<string, number>; queued: Record<string, number> };
  /** Resolves once `ok()` holds, looking after each turn of the event loop's timers. */
  const until = async (ok: () => boolean, what: string) => {
    for (let i = 0; i < 2000 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok(ok(), `never reached: ${what} (${JSON.stringify(stats())})`);
  };
  const viewerFetch = (path: string, init: RequestInit = {}) =>
    fetch(`${r.s.url}${path}`, { ...init, headers: { authorization: `Bearer ${r.tokens.viewer}`, ...(init.body ? { 'content-type': 'application/json' } : {}) } });

  before(async () => {
    const root = makeProject({
      'project.yml': [
        'name: deadlines',
        'query:',
        // The deadline every read below runs under: room for a whole-table read on a loaded machine.
        '  timeout_seconds:',
        '    viewer: 60',
        '  max_concurrent:',
        '    viewer: 1',
        'sources:',
        '  - name: raw',
        '    schema: seeds',
        '    freshness_hours: 1',
        '    tables:',
        '      - name: events',
        '        loaded_at_column: at',
      ].join('\n'),
      'seeds/events.csv': 'id,at\n1,2024-01-01 00:00:00\n2,2024-01-02 00:00:00\n',
    });
    r = await startServerWithRoles(root);
    assert.equal((await r.s.request('POST', '/api/seeds', {}, { token: r.tokens.admin })).status, 200);
    const v = await r.s.request('POST', '/api/versions', {}, { token: r.tokens.admin });
    assert.ok(v.status < 300, v.text);
    version = v.body.version_id;
    assert.ok(version, v.text);
  });
  after(async () => r?.s.close());

  for (const [name, route] of [
    ['/api/versions/{id}/diff', () => `/api/versions/${version}/diff`],
    ['/api/tables/{schema}/{table}/profile', () => '/api/tables/seeds/events/profile'],
    ['/api/sources/freshness', () => '/api/sources/freshness'],
    // Row counts (count(*) of every base table) of the catalog overview, sources and docs.
    ['/api/overview', () => '/api/overview'],
    ['/api/sources', () => '/api/sources'],
    ['/api/docs/structured', () => '/api/docs/structured'],
  ] as const) {
    it(`${name} waits for a viewer slot, and leaves the queue when its client leaves`, async () => {
      const longController = new AbortController();
      const long = viewerFetch('/api/query', { method: 'POST', body: JSON.stringify({ sql: LONG_SQL }), signal: longController.signal });
      let longDone = false;
      const longStatus = long.then(
        (res) => {
          longDone = true;
          return res.status;
        },
        () => 'aborted',
      );
      await until(() => stats().running.viewer === 1, 'the long query holds the slot');

      // Served beside the long query (before), it answers at once; in a slot it queues.
      const controller = new AbortController();
      let answered = false;
      const read = viewerFetch(route(), { signal: controller.signal }).then(
        (res) => {
          answered = true;
          return res.status;
        },
        () => 'aborted',
      );
      await until(() => stats().queued.viewer === 1 || answered, 'the read queues or answers');
      assert.equal(answered, false, 'the read ran beside the long query instead of waiting for a slot');
      assert.equal(longDone, false);
      controller.abort();
      await until(() => stats().queued.viewer === 0, 'the read left the queue once its client left');
      assert.equal(longDone, false, 'left the queue before the slot came free');
      assert.equal(await read, 'aborted');
      // The long query ends when its client leaves, which frees the slot at once (its 408 at the
      // role deadline is reliability/query-deadlines' subject; waiting it out here cost seconds a test).
      longController.abort();
      assert.equal(await longStatus, 'aborted');
      await until(() => stats().running.viewer === 0, 'the slot came back');

      // Unblocked, the same read answers.
      const res = await viewerFetch(route());
      assert.equal(res.status, 200, await res.text());
    });
  }
});
