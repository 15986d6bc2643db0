/**
 * A server with the kernel alone (no built-in plugins), for auth tests that exercise only
 * kernel routes: they then do not depend on the state of every feature plugin. The
 * route-matrix test uses the full startServer on purpose.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { App } from '../../kernel/app.js';
import { createServer } from '../../kernel/http.js';
import type { TestServer } from '../helpers.js';

export async function startKernelServer(projectRoot: string, options: { auth?: boolean } = {}): Promise<TestServer> {
  const noPlugins = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-no-plugins-'));
  const app = await App.boot({ projectRoot, serving: true, auth: options.auth ?? false, builtInPluginsDir: noPlugins });
  await app.start();
  const server = await createServer(app);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    app,
    url,
    async request(method, urlPath, body, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      const res = await fetch(url + urlPath, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON (e.g. HTML of /docs): keep the text.
      }
      return { status: res.status, body: parsed, text, headers: res.headers };
    },
    async close() {
      await server.close();
      await app.close();
      fs.rmSync(noPlugins, { recursive: true, force: true });
    },
  };
}
