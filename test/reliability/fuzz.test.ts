/**
 * Fuzz over every route the running server documents at /docs/json (auth on, admin token):
 * malformed bodies (invalid JSON, wrong types per declared field, missing fields, unknown
 * fields, huge strings, deep nesting, wrong content types), odd and huge path parameters
 * (unicode, bad and double %-encodings, `..`, 1000 and 3000 characters) and bad querystrings.
 * Every answer must be below 500 and every error in dp's shape, with no absolute path and no
 * stack. Seeded and bounded (at most CASES_PER_ROUTE requests per route) so it stays fast.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';
import { seededRandom } from './kill-harness.js';

const CASES_PER_ROUTE = 40;
const SEED = 20261124;

interface Case {
  label: string;
  path: string;
  body?: string;
  contentType?: string;
}

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: Array<{ name: string; schema: any }>;
  bodySchema: any | null;
  /** Needs no token (`security: []` in the description): a 401 there is an answer, not a lost session. */
  isPublic: boolean;
}

const PATH_VALUES: Array<[string, string]> = [
  ['plain', 'x'],
  ['unicode', encodeURIComponent('ü名🙂')],
  ['bad %-encoding', '%zz'],
  ['double-encoded', '%25zz'],
  ['encoded dot-dot', '%2e%2e'],
  ['traversal', '..%2F..%2F..%2Fetc%2Fpasswd'],
  ['raw dot-dot', '..'],
  ['nul byte', '%00'],
  ['overlong utf-8', '%C0%AF'],
  ['quote and comment', encodeURIComponent("x' OR 1=1 --")],
  ['1000 characters', 'a'.repeat(1000)],
  ['3000 characters', 'b'.repeat(3000)],
  ['1000 encoded unicode', encodeURIComponent('é'.repeat(333))],
];
const WILDCARD_VALUES: Array<[string, string]> = [
  ['deep path', 'a/'.repeat(300) + 'x.sql'],
  ['hidden file', '.env'],
  ['dot-slash', '.%2Fproject.yml'],
  ['slash only', '/'],
];

const RAW_BODIES: Array<[string, string, string | undefined]> = [
  ['truncated JSON', '{"a": ', 'application/json'],
  ['bad literal', 'nul', 'application/json'],
  ['empty JSON body', '', 'application/json'],
  ['array', '[]', 'application/json'],
  ['string', '"text"', 'application/json'],
  ['number', '123', 'application/json'],
  ['null', 'null', 'application/json'],
  ['proto key', '{"__proto__": {"polluted": true}}', 'application/json'],
  ['constructor key', '{"constructor": {"prototype": {"polluted": true}}}', 'application/json'],
  ['deep arrays', '['.repeat(20_000) + ']'.repeat(20_000), 'application/json'],
  ['deep objects', '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000), 'application/json'],
  ['text/plain', 'hello', 'text/plain'],
  ['form', 'a=1&b=2', 'application/x-www-form-urlencoded'],
  ['no content type', '{}', undefined],
  ['number 1e400', '{"limit": 1e400}', 'application/json'],
];

const QUERY_VALUES: Array<[string, string]> = [
  ['word', 'abc'],
  ['1e400', '1e400'],
  ['negative', '-1'],
  ['empty', ''],
  ['huge integer', '99999999999999999999'],
  ['NaN', 'NaN'],
  ['bad %-encoding', '%zz'],
  ['long', 'q'.repeat(4000)],
];

/** Values of the wrong JSON type for a declared schema type. */
function wrongValues(schema: any): unknown[] {
  const types: string[] = Array.isArray(schema?.type) ? schema.type : schema?.type ? [schema.type] : [];
  if (types.length === 0) return [];
  const all: Array<[string, unknown]> = [
    ['string', 12345],
    ['number', 'twelve'],
    ['integer', 1.5],
    ['boolean', 'yes'],
    ['array', { not: 'an array' }],
    ['object', ['not', 'an', 'object']],
    ['null', 0],
  ];
  const out = all.filter(([t]) => types.includes(t)).map(([, v]) => v);
  // A value no declared type accepts, whatever they are.
  if (!types.includes('object')) out.push({ nested: { deep: [1, 2, 3] } });
  if (!types.includes('boolean')) out.push(true);
  return out.filter((v) => !typesAccept(types, v));
}

function typesAccept(types: string[], v: unknown): boolean {
  return types.some((t) =>
    t === 'null' ? v === null : t === 'array' ? Array.isArray(v) : t === 'integer' ? Number.isInteger(v) : t === 'object' ? typeof v === 'object' && v !== null && !Array.isArray(v) : typeof v === t,
  );
}

/** A plausible value for a required field (the request still carries one wrong field). */
function plausible(schema: any): unknown {
  const t = Array.isArray(schema?.type) ? schema.type[0] : schema?.type;
  if (schema?.enum) return schema.enum[0];
  return t === 'integer' || t === 'number' ? 1 : t === 'boolean' ? false : t === 'array' ? [] : t === 'object' ? {} : t === 'null' ? null : 'x';
}

function casesFor(op: Operation): Case[] {
  const fill = (values: Record<string, string>) => op.path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? 'x');
  const base = fill({});
  const cases: Case[] = [];
  for (const p of op.pathParams) {
    const values = p === '*' ? [...PATH_VALUES, ...WILDCARD_VALUES] : PATH_VALUES;
    for (const [label, value] of values) cases.push({ label: `path ${p}: ${label}`, path: fill({ [p]: value }) });
  }
  for (const q of op.queryParams) {
    for (const [label, value] of QUERY_VALUES) cases.push({ label: `query ${q.name}: ${label}`, path: `${base}?${q.name}=${value}` });
    cases.push({ label: `query ${q.name}: repeated`, path: `${base}?${q.name}=1&${q.name}=2` });
  }
  cases.push({ label: 'unknown query parameter', path: `${base}?zzz_unknown=1` });
  if (op.bodySchema) {
    for (const [label, body, contentType] of RAW_BODIES) cases.push({ label: `body: ${label}`, path: base, body, contentType });
    const props: Record<string, any> = op.bodySchema.properties ?? {};
    const required: string[] = op.bodySchema.required ?? [];
    const requiredValues = Object.fromEntries(required.map((r) => [r, plausible(props[r])]));
    cases.push({ label: 'body: missing required fields', path: base, body: '{}', contentType: 'application/json' });
    cases.push({ label: 'body: unknown field', path: base, body: JSON.stringify({ ...requiredValues, zzz_unknown: 1 }), contentType: 'application/json' });
    for (const [name, schema] of Object.entries(props)) {
      for (const v of wrongValues(schema)) {
        cases.push({ label: `body ${name}: ${JSON.stringify(v)}`, path: base, body: JSON.stringify({ ...requiredValues, [name]: v }), contentType: 'application/json' });
      }
      const types = [schema?.type].flat();
      if (types.includes('string')) {
        cases.push({ label: `body ${name}: huge string`, path: base, body: JSON.stringify({ ...requiredValues, [name]: 'z'.repeat(200_000) }), contentType: 'application/json' });
        cases.push({ label: `body ${name}: unicode and control characters`, path: base, body: JSON.stringify({ ...requiredValues, [name]: '\u0000\u202e🙂../..\\' }), contentType: 'application/json' });
      }
    }
  }
  return cases;
}

/** One request with exact path bytes (fetch would normalize `..` and %-encodings). */
function send(url: string, method: string, path: string, token: string, body?: string, contentType?: string): Promise<{ status: number; contentType: string; text: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (contentType) headers['content-type'] = contentType;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const req = http.request({ host: '127.0.0.1', port: Number(port), method, path, headers, timeout: 20_000 }, (res) => {
      const type = String(res.headers['content-type'] ?? '');
      if (type.startsWith('text/event-stream')) {
        res.destroy();
        return resolve({ status: res.statusCode ?? 0, contentType: type, text: '' });
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: type, text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within 20 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

describe('fuzz over every documented route (auth on)', () => {
  let s: TestServer;
  let root: string;
  let token: string;
  let operations: Operation[];

  before(async () => {
    root = makeProject({
      'transform/main/orders.sql': 'SELECT 1 AS id, 10 AS amount\n',
      'seeds/people.csv': 'id,name\n1,a\n',
      'notes/a.sql': 'SELECT 1\n',
    });
    s = await startServer(root, { auth: true });
    token = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret-pw-1' })).body.token;
    const docs = await s.request('GET', '/docs/json', undefined, { token });
    assert.equal(docs.status, 200);
    operations = [];
    for (const [p, ops] of Object.entries<Record<string, any>>(docs.body.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const params: any[] = op.parameters ?? [];
        operations.push({
          method: method.toUpperCase(),
          path: p,
          pathParams: params.filter((x) => x.in === 'path').map((x) => x.name),
          queryParams: params.filter((x) => x.in === 'query').map((x) => ({ name: x.name, schema: x.schema })),
          bodySchema: op.requestBody?.content?.['application/json']?.schema ?? null,
          isPublic: Array.isArray(op.security) && op.security.length === 0,
        });
      }
    }
  });
  after(() => s.close());

  it('answers every malformed request below 500, in dp error shape, without paths or stacks', async () => {
    const rng = seededRandom(SEED);
    const failures: string[] = [];
    let sent = 0;
    // Logging out would end the session the rest of the run uses.
    const fuzzed = operations.filter((op) => !(op.method === 'POST' && op.path === '/api/auth/logout'));
    assert.ok(fuzzed.length >= 40, `the server documents its routes (${fuzzed.length})`);
    for (const op of fuzzed) {
      const all = casesFor(op);
      // A seeded shuffle, then the first CASES_PER_ROUTE: every kind gets its turn across routes.
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(rng() * (i + 1));
        [all[i], all[j]] = [all[j], all[i]];
      }
      for (const c of all.slice(0, CASES_PER_ROUTE)) {
        const where = `${op.method} ${op.path} [${c.label}]`;
        let res;
        try {
          res = await send(s.url, op.method, c.path, token, c.body, c.contentType);
        } catch (e) {
          failures.push(`${where}: ${(e as Error).message}`);
          continue;
        }
        sent++;
        if (res.status >= 500) failures.push(`${where}: ${res.status} ${res.text.slice(0, 200)}`);
        if (res.status === 401 && !op.isPublic) failures.push(`${where}: 401, the session was lost`);
        if (res.status < 400) continue;
        let body: any = null;
        try {
          body = JSON.parse(res.text);
        } catch {
          /* checked below */
        }
        const shaped =
          body && Object.keys(body).length === 1 && typeof body.error?.code === 'string' && typeof body.error?.message === 'string' && typeof body.error?.details === 'object';
        if (!shaped) failures.push(`${where}: ${res.status} not in dp shape: ${res.text.slice(0, 200)}`);
        if (res.text.includes(root)) failures.push(`${where}: the answer shows the absolute project path`);
        if (/\n\s+at .+:\d+:\d+/.test(res.text)) failures.push(`${where}: the answer holds a stack trace`);
      }
    }
    assert.ok(sent > 500, `enough requests were sent (${sent})`);
    assert.equal(failures.length, 0, `${failures.length} of ${sent} answers broke the rules:\n${failures.slice(0, 60).join('\n')}`);
    // The server is still healthy after all of it.
    assert.equal((await s.request('GET', '/api/health')).body.status, 'ok');
  });
});
