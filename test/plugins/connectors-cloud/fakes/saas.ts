/**
 * A local fake of the SaaS APIs the rest_api, payments, ecommerce and crm types read: one
 * HTTP server on 127.0.0.1 whose records live in memory (tests add rows between syncs). It
 * checks credentials and paginates the way each API does; every request is recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Rec = Record<string, unknown>;

export interface FakeSaas {
  url: string;
  token: string;
  data: Map<string, Rec[]>;
  requests: Array<{ path: string; query: Record<string, string>; headers: http.IncomingHttpHeaders }>;
  /** When set, a request whose query has this parameter value answers 500 (a failure midway). */
  failWhen: { param: string; value: string } | null;
  close(): Promise<void>;
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function after(records: Rec[], field: string, value: string | undefined, inclusive: boolean): Rec[] {
  if (value === undefined) return records;
  const num = Number(value);
  return records.filter((r) => {
    const v = r[field];
    if (typeof v === 'number' && Number.isFinite(num)) return inclusive ? v >= num : v > num;
    return inclusive ? Date.parse(String(v)) >= Date.parse(value) : Date.parse(String(v)) > Date.parse(value);
  });
}

export async function startFakeSaas(token = 'sk_test_cc_4242'): Promise<FakeSaas> {
  const data = new Map<string, Rec[]>();
  const requests: FakeSaas['requests'] = [];
  const fake = { url: '', token, data, requests, failWhen: null, close: async () => undefined } as FakeSaas;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const q = Object.fromEntries(url.searchParams);
    requests.push({ path: url.pathname, query: q, headers: req.headers });
    const p = url.pathname;
    if (fake.failWhen && q[fake.failWhen.param] === fake.failWhen.value) return send(res, 500, { message: 'internal error' });
    if (p === '/api/hang') return; // never answers: the timeout test
    const bearer = req.headers.authorization === `Bearer ${token}`;
    const keyed = req.headers['x-api-key'] === token;
    const shopKeyed = req.headers['x-shopify-access-token'] === token;
    if (p === '/api/notjson') return void (res.writeHead(200, { 'content-type': 'text/html' }), res.end('<html>hi</html>'));

    // rest_api: page pagination, records at data.items, `updated_since` is inclusive (as many APIs are).
    let m: RegExpExecArray | null;
    if ((m = /^\/api\/paged\/(\w+)$/.exec(p))) {
      if (!bearer && !keyed) return send(res, 401, { message: 'invalid token' });
      const size = Number(q.per_page ?? 10);
      const page = Number(q.page ?? 1);
      const all = after(data.get(m[1]!) ?? [], 'updated_at', q.updated_since, true);
      return send(res, 200, { data: { items: all.slice((page - 1) * size, page * size) }, page });
    }
    // rest_api: cursor pagination with meta.next_cursor (an opaque offset).
    if ((m = /^\/api\/cursor\/(\w+)$/.exec(p))) {
      if (!bearer) return send(res, 401, { message: 'invalid token' });
      const size = Number(q.limit ?? 10);
      const start = q.cursor ? Number(Buffer.from(q.cursor, 'base64').toString()) : 0;
      const all = data.get(m[1]!) ?? [];
      const next = start + size < all.length ? Buffer.from(String(start + size)).toString('base64') : null;
      return send(res, 200, { results: all.slice(start, start + size), meta: { next_cursor: next } });
    }
    // rest_api: offset pagination, the answer is the bare array.
    if ((m = /^\/api\/offset\/(\w+)$/.exec(p))) {
      if (!bearer) return send(res, 401, { message: 'invalid token' });
      const all = data.get(m[1]!) ?? [];
      return send(res, 200, all.slice(Number(q.offset ?? 0), Number(q.offset ?? 0) + Number(q.limit ?? 10)));
    }
    // rest_api: Link-header pagination.
    if ((m = /^\/api\/linked\/(\w+)$/.exec(p))) {
      if (!bearer) return send(res, 401, { message: 'invalid token' });
      const size = Number(q.limit ?? 10);
      const page = Number(q.page_info ?? 0);
      const all = data.get(m[1]!) ?? [];
      const headers: Record<string, string> = {};
      if ((page + 1) * size < all.length) headers.link = `<${url.pathname}?limit=${size}&page_info=${page + 1}>; rel="next"`;
      if (q.evil) headers.link = `<http://elsewhere.invalid/steal?page_info=1>; rel="next"`;
      return send(res, 200, { records: all.slice(page * size, (page + 1) * size) }, headers);
    }

    // payments (Stripe-like): {object: list, data, has_more}, starting_after=<id>, created[gt].
    if ((m = /^\/v1\/(customers|charges|invoices|refunds)$/.exec(p))) {
      if (!bearer) return send(res, 401, { error: { message: 'Invalid API Key provided', type: 'invalid_request_error' } });
      const limit = Number(q.limit ?? 10);
      // Newest first, as the real API lists.
      let all = after(data.get(`payments.${m[1]}`) ?? [], 'created', q['created[gt]'], false).slice().reverse();
      if (q.starting_after) all = all.slice(all.findIndex((r) => r.id === q.starting_after) + 1);
      return send(res, 200, { object: 'list', data: all.slice(0, limit), has_more: all.length > limit, url: p });
    }
    // ecommerce (Shopify-like): {orders: [...]}, Link header with page_info, updated_at_min (inclusive).
    if ((m = /^\/admin\/api\/2024-01\/(orders|products|customers)\.json$/.exec(p))) {
      if (!shopKeyed) return send(res, 401, { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' });
      const limit = Number(q.limit ?? 50);
      // page_info carries the offset and the filter, as the real API's opaque page token does.
      const state = q.page_info ? (JSON.parse(Buffer.from(q.page_info, 'base64url').toString()) as { offset: number; min?: string }) : { offset: 0, min: q.updated_at_min };
      const offset = state.offset;
      const all = after(data.get(`ecommerce.${m[1]}`) ?? [], 'updated_at', state.min, true);
      const headers: Record<string, string> = {};
      if (offset + limit < all.length) {
        const next = new URL(`${p}?limit=${limit}&page_info=${Buffer.from(JSON.stringify({ offset: offset + limit, min: state.min })).toString('base64url')}`, `http://${req.headers.host}`);
        headers.link = `<${next.toString()}>; rel="next"`;
      }
      return send(res, 200, { [m[1]!]: all.slice(offset, offset + limit) }, headers);
    }
    // crm (HubSpot-like): {results, paging: {next: {after}}}.
    if ((m = /^\/crm\/v3\/objects\/(contacts|companies|deals)$/.exec(p))) {
      if (!bearer) return send(res, 401, { status: 'error', message: 'Authentication credentials not found.' });
      const limit = Number(q.limit ?? 10);
      const start = Number(q.after ?? 0);
      const all = data.get(`crm.${m[1]}`) ?? [];
      const body: Rec = { results: all.slice(start, start + limit) };
      if (start + limit < all.length) body.paging = { next: { after: String(start + limit), link: 'ignored' } };
      return send(res, 200, body);
    }
    send(res, 404, { message: 'no such route' });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return fake;
}
