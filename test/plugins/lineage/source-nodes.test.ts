/**
 * `sources:` in the full DAG (issue 33 point 14): a source declared with its schema but no
 * `tables:` list stands for the tables of that schema, each a declared source node, read by a
 * model or not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('GET /api/dag/full and sources declared without tables', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      makeProject({
        'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nsources:\n  - name: raw\n    schema: landing\n    description: Files the ingest lands\n',
        'transform/staging/stg_events.sql': '-- @config materialized=view, schema=staging\nSELECT * FROM landing.events\n',
      }),
    );
    await s.app.db.run('CREATE SCHEMA landing; CREATE TABLE landing.events AS SELECT 1 AS id; CREATE TABLE landing.clicks AS SELECT 2 AS id');
  });
  after(async () => s.close());

  it('has a declared source node for each table of the schema, with the edges into models', async () => {
    const r = await s.request('GET', '/api/dag/full');
    assert.equal(r.status, 200, r.text);
    const sources = r.body.nodes.filter((n: { type: string }) => n.type === 'source').map((n: any) => [n.id, n.declared, n.source]);
    assert.deepEqual(sources.sort(), [
      ['landing.clicks', true, 'raw'],
      ['landing.events', true, 'raw'],
    ]);
    assert.ok(r.body.edges.some((e: { source: string; target: string }) => e.source === 'landing.events' && e.target === 'staging.stg_events'));
  });
});
