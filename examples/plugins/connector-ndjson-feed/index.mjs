// A third-party connector type in plain JavaScript: `ndjson_feed` reads a newline-delimited
// JSON feed over HTTP (one record per line) into one table. A project loads it with
//   plugins:
//     paths: [path/to/connector-ndjson-feed]
// The connectors plugin does the rest: `dp connect ndjson_feed --url ... --token ...`, setup,
// syncs, schedules and CDC state. The type only tests, discovers and reads.
import readline from 'node:readline';
import { Readable } from 'node:stream';

const PARAMS = {
  type: 'object',
  required: ['url'],
  properties: {
    url: { type: 'string', description: 'URL of the feed (one JSON object per line)' },
    token: { type: 'string', 'x-secret': true, description: 'Bearer token, when the feed needs one' },
    table: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'feed', description: 'Table name of the feed' },
    timeout_ms: { type: 'integer', minimum: 100, default: 10000, description: 'Milliseconds to wait for the feed to answer' },
  },
  additionalProperties: false,
};

/** The cause of a failed fetch in words; never the URL's query (it may hold a token). */
function cause(error, timeoutMs) {
  const code = error?.cause?.code ?? error?.code;
  if (error?.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  return error?.message ?? String(error);
}

async function open(config, signal) {
  const timeoutMs = config.timeout_ms ?? 10000;
  const host = new URL(config.url).host;
  let res;
  try {
    res = await fetch(config.url, {
      headers: config.token ? { authorization: `Bearer ${config.token}` } : {},
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
    });
  } catch (e) {
    if (signal.aborted) throw e;
    throw new Error(`${host}: ${cause(e, timeoutMs)}`);
  }
  if (res.status === 401 || res.status === 403) throw new Error(`${host}: authentication failed`);
  if (!res.ok) throw new Error(`${host}: HTTP ${res.status}`);
  return res;
}

/** Records of the feed, one line at a time (constant memory). */
async function* records(res) {
  const lines = readline.createInterface({ input: Readable.fromWeb(res.body), crlfDelay: Infinity });
  for await (const line of lines) if (line.trim()) yield JSON.parse(line);
}

function typeOf(v) {
  if (typeof v === 'boolean') return 'BOOLEAN';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'BIGINT' : 'DOUBLE';
  if (v !== null && typeof v === 'object') return 'JSON';
  return 'VARCHAR';
}

function columnsOf(sample) {
  const types = new Map();
  for (const r of sample) {
    for (const [k, v] of Object.entries(r)) {
      if (v === null || v === undefined) {
        if (!types.has(k)) types.set(k, undefined);
        continue;
      }
      const t = typeOf(v);
      const prior = types.get(k);
      const numbers = new Set([prior, t]).size === 2 && [prior, t].every((x) => x === 'BIGINT' || x === 'DOUBLE');
      types.set(k, !prior || prior === t ? t : numbers ? 'DOUBLE' : 'VARCHAR');
    }
  }
  return [...types].map(([name, type]) => ({ name, type: type ?? 'VARCHAR' }));
}

function value(v, type) {
  if (v === null || v === undefined) return null;
  if (type === 'JSON' || (type === 'VARCHAR' && typeof v === 'object')) return JSON.stringify(v);
  if (type === 'VARCHAR') return String(v);
  return v;
}

const ndjsonFeed = {
  type: 'ndjson_feed',
  label: 'NDJSON feed',
  description: 'Newline-delimited JSON over HTTP, one record per line, into one table',
  params: PARAMS,
  cdcModes: ['full_refresh'],

  async testConnection(config, signal) {
    try {
      const res = await open(config, signal);
      await res.body?.cancel();
      return { ok: true, message: `feed at ${new URL(config.url).host} answers` };
    } catch (e) {
      return { ok: false, message: e.message };
    }
  },

  async discover(config, signal) {
    const res = await open(config, signal);
    const sample = [];
    for await (const r of records(res)) {
      sample.push(r);
      if (sample.length >= 100) break;
    }
    return [{ name: config.table ?? 'feed', columns: columnsOf(sample) }];
  },

  async *read(config, request) {
    if (request.table !== (config.table ?? 'feed')) throw new Error(`the feed has one table, '${config.table ?? 'feed'}'`);
    const batchRows = request.batchRows ?? 10000;
    const res = await open(config, request.signal);
    let columns;
    let pending = [];
    const flush = () => {
      columns ??= columnsOf(pending);
      const batch = { columns, rows: pending.map((r) => columns.map((c) => value(r[c.name], c.type))) };
      pending = [];
      return batch;
    };
    for await (const r of records(res)) {
      pending.push(r);
      if (pending.length >= batchRows) yield flush();
    }
    // At least one batch, even for an empty feed: it carries the columns.
    if (pending.length || !columns) yield flush();
  },

  // The standard generated script: it asks the connectors plugin to sync the connection as
  // project.yml declares it, so the script never holds a parameter or a secret.
  generateScript(connection, tables, targetSchema) {
    return [
      '/**',
      ` * Connector ${connection.name} (type ${connection.type}), generated by dp.`,
      ...tables.map((t) => ` * Loads INSERT INTO ${targetSchema}.${t}`),
      ' */',
      'export default async (ctx) => {',
      `  const results = await ctx.connectors.sync(${JSON.stringify(connection.name)});`,
      "  const failed = results.filter((r) => r.status === 'error');",
      "  if (failed.length) throw new Error(failed.map((r) => `${r.table}: ${r.error}`).join('; '));",
      '  return results;',
      '};',
      '',
    ].join('\n');
  },
};

export default {
  setup(ctx) {
    ctx.extend('connectors.types', ndjsonFeed);
  },
};
