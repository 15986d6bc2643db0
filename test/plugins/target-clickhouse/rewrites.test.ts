/**
 * What the ClickHouse target does to a query's text, without a server: `$name` parameters bound
 * as ClickHouse query parameters (the value never in the text), and masking's `* REPLACE`
 * wrappers expanded into their columns for 18.16 and read back as `* REPLACE` for the checks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { bindParameters, hasQueryParameters, parameterNodes } from '../../../plugins/target-clickhouse/params.js';
import { contractExpanded, expandStarReplace, hasStarReplace } from '../../../plugins/target-clickhouse/star-expand.js';
import { bootApp, makeProject } from '../../helpers.js';

describe('query rewrites for a ClickHouse target', () => {
  let app: App;
  before(async () => {
    app = await bootApp(makeProject({}));
  });
  after(async () => app?.close());

  const parameters = async (sql: string) => {
    const parsed = await app.db.parse(sql);
    assert.ok(parsed.ok);
    return parameterNodes(parsed.tree.statements);
  };

  it('binds $name parameters as {name:Type}, the values beside the text', async () => {
    const names = await parameters('SELECT id FROM t WHERE tier = $tier AND id > $id OR tier = $tier');
    assert.deepEqual(names, ['tier', 'id', 'tier']);
    const bound = bindParameters("SELECT id FROM t WHERE tier = $tier AND id > $id OR tier = $tier", names, { tier: "x' OR 1 = 1 --", id: 3 });
    assert.equal(bound.sql, 'SELECT id FROM t WHERE tier = {tier:String} AND id > {id:Int64} OR tier = {tier:String}');
    assert.deepEqual(bound.params, { tier: "x' OR 1 = 1 --", id: 3 });
    assert.equal(bindParameters('SELECT $a, $b, $c', ['a', 'b', 'c'], { a: 1.5, b: true, c: null }).sql, 'SELECT {a:Float64}, {b:UInt8}, {c:Nullable(String)}');
  });

  it('refuses a parameter it cannot place or type, and a missing one', async () => {
    const refused = (fn: () => unknown) => assert.throws(fn, (e: any) => e.code === 'unsupported_on_target');
    // A `$name` in a string literal cannot be told from the parameter: refused, never guessed.
    refused(() => bindParameters("SELECT '$tier' AS a, $tier AS b", ['tier'], { tier: 'x' }));
    refused(() => bindParameters('SELECT $tier', ['tier'], {}));
    refused(() => bindParameters('SELECT $tier', ['tier'], { tier: { nested: 1 } }));
    refused(() => bindParameters('SELECT $1', ['1'], { 1: 2 }));
    assert.equal(hasQueryParameters('18.16.1'), false);
    assert.equal(hasQueryParameters('19.5.2'), true);
    assert.equal(hasQueryParameters('23.8.1'), true);
  });

  const columns = async (schema: string, table: string) => {
    assert.deepEqual([schema, table], ['crm', 'people']);
    return ['id', 'email', 'tier'];
  };

  it('expands a * REPLACE wrapper into the columns in order, and reads it back as the same wrapper', async () => {
    assert.equal(hasStarReplace('18.16.1'), false);
    assert.equal(hasStarReplace('21.3.4'), true);
    const masked = "SELECT e FROM (SELECT * REPLACE ('***' AS email) FROM crm.people) AS p";
    const expanded = await expandStarReplace(app.db, masked, columns, 'main');
    assert.ok(expanded);
    assert.doesNotMatch(expanded, /REPLACE/);
    assert.match(expanded, /SELECT id, '\*\*\*' AS email, tier FROM crm\.people/);
    const back = await contractExpanded(app.db, expanded, columns, 'main');
    const [a, b] = await Promise.all([app.db.parse(back), app.db.parse(masked)]);
    assert.ok(a.ok && b.ok);
    assert.deepEqual(stripLocations(a.tree), stripLocations(b.tree), back);
    assert.equal(await expandStarReplace(app.db, 'SELECT id FROM crm.people', columns, 'main'), null, 'no wrapper, nothing to expand');
  });

  it('a read-back text that lost a mask is not made into a wrapper', async () => {
    // The expanded wrapper with the mask dropped by a transpiler: the plain columns read back as `*`, with no mask to check.
    const back = await contractExpanded(app.db, 'SELECT e FROM (SELECT id, email, tier FROM crm.people) AS p', columns, 'main');
    assert.match(back, /SELECT \* FROM crm\.people/);
    assert.doesNotMatch(back, /REPLACE/);
    // A column out of order is left as written.
    const shuffled = 'SELECT e FROM (SELECT email, id, tier FROM crm.people) AS p';
    assert.equal(await contractExpanded(app.db, shuffled, columns, 'main'), shuffled);
  });
});

/** A parse tree without its byte offsets (two texts of the same statement differ there only). */
function stripLocations(tree: unknown): unknown {
  return JSON.parse(JSON.stringify(tree, (k, v) => (k === 'query_location' ? undefined : v)));
}
