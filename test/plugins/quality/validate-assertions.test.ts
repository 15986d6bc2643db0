/**
 * `dp validate` parses every `@assert` the way the build evaluates it (issue 33 point 4): a
 * double-quoted value list (`["x"]`, a JSON habit) is reported before any transform, with the
 * file, the directive's line and how to write it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeProject, runCli } from '../../helpers.js';

describe('dp validate and @assert', () => {
  it('reports an assertion the build could not evaluate, with file, line and the fix', () => {
    const root = makeProject({
      'transform/marts/orders.sql': "-- @config materialized=table, schema=marts\n-- @assert unique(id)\n-- @assert accepted_values(status, [\"open\", \"closed\"])\nSELECT 1 AS id, 'open' AS status\n",
      'transform/marts/fine.sql': "-- @config materialized=table, schema=marts\n-- @assert accepted_values(status, ['open'])\n-- @assert row_count > 0\nSELECT 'open' AS status\n",
    });
    const r = runCli(['validate', '--project', root]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(lines, [`transform/marts/orders.sql:3: @assert accepted_values(status, ["open", "closed"]): accepted_values() takes literal values: write 'open' in single quotes ("open" would name a column)`, '1 problem']);
  });
});
