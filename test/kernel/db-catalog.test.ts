/**
 * The catalog port (sdk/db-catalog.ts): relations, kinds, existence and columns read through the
 * kernel's DuckDB source, kept until the catalog version changes; and the rule that no plugin
 * reads DuckDB's catalog functions or opens DuckDB itself. Real DuckDB files.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { DuckDatabase } from '../../kernel/database.js';
import { DuckCatalogSource } from '../../kernel/db-catalog.js';
import { CachedCatalog, type CatalogSource } from '../../sdk/db-catalog.js';
import { REPO_ROOT, tempDir } from '../helpers.js';

const tempFile = () => path.join(tempDir('dp-catalog-'), 'db.duckdb');

/** A source that counts the reads that reach DuckDB. */
function counting(source: CatalogSource): CatalogSource & { reads: number } {
  const counted = {
    reads: 0,
    relations: (opts?: Parameters<CatalogSource['relations']>[0]) => {
      counted.reads++;
      return source.relations(opts);
    },
    columns: (opts?: Parameters<CatalogSource['columns']>[0]) => {
      counted.reads++;
      return source.columns(opts);
    },
  };
  return counted;
}

async function withDatabase(fn: (db: DuckDatabase) => Promise<void>): Promise<void> {
  const db = new DuckDatabase(tempFile());
  try {
    await fn(db);
  } finally {
    db.close();
  }
}

describe('catalog port', () => {
  it('lists relations with their kinds, hides the service schemas unless asked, and finds names as DuckDB resolves them', () =>
    withDatabase(async (db) => {
      await db.run(`CREATE SCHEMA shop; CREATE TABLE shop.orders (id INTEGER NOT NULL, amount DOUBLE); CREATE VIEW shop.big AS SELECT * FROM shop.orders WHERE amount > 10;
        CREATE SCHEMA _service; CREATE TABLE _service.bookkeeping (k VARCHAR); COMMENT ON TABLE shop.orders IS 'one row per order'`);
      const relations = await db.catalog.relations();
      assert.deepEqual(
        relations.map((r) => [r.schema, r.name, r.kind]),
        [
          ['shop', 'big', 'view'],
          ['shop', 'orders', 'table'],
        ],
      );
      assert.equal(relations.find((r) => r.name === 'orders')?.comment, 'one row per order');
      assert.match(relations.find((r) => r.name === 'big')?.definition ?? '', /amount > 10/);
      assert.ok((await db.catalog.relations({ includeInternal: true })).some((r) => r.schema === '_service' && r.name === 'bookkeeping'));
      assert.equal(await db.catalog.kind('shop', 'orders'), 'table');
      assert.equal(await db.catalog.kind('SHOP', 'Big'), 'view');
      assert.equal((await db.catalog.relation('Shop', 'ORDERS'))?.name, 'orders');
      assert.equal(await db.catalog.exists('shop', 'missing'), false);
      assert.equal(await db.catalog.kind('nowhere', 'orders'), null);
    }));

  it('answers columns in their order with types and nullability, none for a missing relation', () =>
    withDatabase(async (db) => {
      await db.run('CREATE TABLE main.wide (z VARCHAR, a INTEGER NOT NULL, m DECIMAL(10,2), l VARCHAR[])');
      assert.deepEqual(
        (await db.catalog.columns('main', 'WIDE')).map((c) => [c.name, c.type, c.nullable, c.ordinal]),
        [
          ['z', 'VARCHAR', true, 1],
          ['a', 'INTEGER', false, 2],
          ['m', 'DECIMAL(10,2)', true, 3],
          ['l', 'VARCHAR[]', true, 4],
        ],
      );
      assert.deepEqual(await db.catalog.columns('main', 'nope'), []);
      assert.deepEqual(
        (await db.catalog.allColumns()).map((c) => `${c.table}.${c.name}`),
        ['wide.z', 'wide.a', 'wide.m', 'wide.l'],
      );
    }));

  it('keeps answers until a CREATE or DROP changes the catalog version, then reads again', () =>
    withDatabase(async (db) => {
      const source = counting(new DuckCatalogSource(db));
      const catalog = new CachedCatalog(source, () => db.catalogVersion);
      await db.run('CREATE TABLE main.a (x INTEGER)');
      assert.equal(await catalog.exists('main', 'a'), true);
      assert.equal(await catalog.exists('main', 'b'), false);
      await catalog.columns('main', 'a');
      const reads = source.reads;
      // Repeated questions under one version reach DuckDB no more.
      assert.equal(await catalog.exists('main', 'a'), true);
      assert.equal(await catalog.exists('main', 'b'), false);
      assert.equal((await catalog.columns('main', 'a')).length, 1);
      assert.equal(source.reads, reads);

      await db.run('CREATE TABLE main.b (y INTEGER, z INTEGER)');
      assert.equal(await catalog.exists('main', 'b'), true);
      assert.equal((await catalog.columns('main', 'b')).length, 2);
      await db.run('ALTER TABLE main.a ADD COLUMN w VARCHAR');
      assert.deepEqual((await catalog.columns('main', 'a')).map((c) => c.name), ['x', 'w']);
      await db.run('DROP TABLE main.a');
      assert.equal(await catalog.exists('main', 'a'), false);
      assert.deepEqual(await catalog.columns('main', 'a'), []);
      assert.ok(source.reads > reads);
      // The kernel's own port is kept on the same version.
      assert.equal(await db.catalog.kind('main', 'b'), 'table');
      await db.run('DROP TABLE main.b; CREATE VIEW main.b AS SELECT 1 AS one');
      assert.equal(await db.catalog.kind('main', 'b'), 'view');
    }));

  it("a connection's catalog sees its own transaction; the shared port sees the table once it commits", () =>
    withDatabase(async (db) => {
      await db.withConnection((c) =>
        c.transaction(async (tx) => {
          await tx.run('CREATE TABLE main.staged (id INTEGER)');
          assert.equal(await tx.catalog.kind('main', 'staged'), 'table');
          assert.equal(await db.catalog.exists('main', 'staged'), false);
        }),
      );
      assert.equal(await db.catalog.exists('main', 'staged'), true);
    }));

  it("reads an attached database's relations when asked for it", () =>
    withDatabase(async (db) => {
      const other = new DuckDatabase(tempFile());
      await other.run('CREATE SCHEMA marts; CREATE TABLE marts.kpis (v INTEGER)');
      other.close();
      await db.run(`ATTACH '${other.path}' AS other_build (READ_ONLY)`);
      assert.deepEqual((await db.catalog.relations()).map((r) => r.name), []);
      assert.deepEqual((await db.catalog.relations({ database: 'other_build' })).map((r) => `${r.schema}.${r.name}`), ['marts.kpis']);
      const { current, columns } = await db.catalog.resolvableColumns();
      assert.equal(current, 'db');
      assert.ok(columns.some((c) => c.database === 'other_build' && c.table === 'kpis' && c.name === 'v'));
    }));
});

/** DuckDB's catalog, read by name: only the kernel's catalog source may say these. */
const CATALOG_READS = [/\bduckdb_(tables|columns|views|schemas|constraints|indexes|databases|dependencies|sequences)\s*\(/i, /\bpragma_table_info\b/i, /\bPRAGMA\s+(table_info|show_tables)\b/i, /\bSHOW\s+(ALL\s+)?TABLES\b/i, /\binformation_schema\s*\./i];
/** Files whose `information_schema` queries go to a remote source database (PostgreSQL, MySQL, a cloud warehouse), never to DuckDB. */
const REMOTE_CATALOG_FILES = new Set(['plugins/connectors/types/postgres.ts', 'plugins/connectors/types/mysql.ts', 'plugins/connectors-cloud/warehouse-pg.ts', 'plugins/connectors-cloud/warehouse-arrow.ts']);

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The text of every string and template literal in a file (comments and code left out), and its module imports. */
function literalsAndImports(file: string): { literals: string[]; imports: string[] } {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const literals: string[] = [];
  const imports: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      const parent = node.parent;
      if (parent && (ts.isImportDeclaration(parent) || ts.isExportDeclaration(parent)) && parent.moduleSpecifier === node) imports.push(node.text);
      else if (parent && ts.isCallExpression(parent) && parent.expression.kind === ts.SyntaxKind.ImportKeyword) imports.push(node.text);
      else literals.push(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { literals, imports };
}

describe('plugins read the catalog only through the port', () => {
  it('the scan sees a catalog function in SQL text and an import of DuckDB, not one in a comment', () => {
    const dir = tempDir('dp-catalog-scan-');
    const file = path.join(dir, 'x.ts');
    fs.writeFileSync(file, "// duckdb_tables() in a comment\nimport { DuckDBInstance } from '@duckdb/node-api';\nconst q = `SELECT * FROM duckdb_columns() WHERE ${1}`;\n");
    const { literals, imports } = literalsAndImports(file);
    assert.deepEqual(imports, ['@duckdb/node-api']);
    assert.ok(literals.some((l) => CATALOG_READS.some((re) => re.test(l))));
    assert.ok(!literals.some((l) => l.includes('duckdb_tables')));
  });

  it('no plugin file queries DuckDB catalog functions or opens DuckDB itself', () => {
    const offenders: string[] = [];
    const files = sourceFiles(path.join(REPO_ROOT, 'plugins'));
    assert.ok(files.length > 100, `scanned ${files.length} files`);
    for (const file of files) {
      const rel = path.relative(REPO_ROOT, file).split(path.sep).join('/');
      const text = fs.readFileSync(file, 'utf8');
      // Only a file that says one of these somewhere needs its literals read.
      if (!text.includes('@duckdb/') && !CATALOG_READS.some((re) => re.test(text))) continue;
      const { literals, imports } = literalsAndImports(file);
      for (const spec of imports) if (spec.startsWith('@duckdb/')) offenders.push(`${rel}: imports ${spec} (use ctx.db, or ctx.db.scratch() for a private DuckDB)`);
      for (const literal of literals) {
        for (const re of CATALOG_READS) {
          if (re.source.includes('information_schema') && REMOTE_CATALOG_FILES.has(rel)) continue;
          if (re.test(literal)) offenders.push(`${rel}: ${literal.match(re)![0]} (read the catalog through ctx.db.catalog)`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });
});
