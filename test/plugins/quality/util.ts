/** Helpers of the quality tests: firing the models plugin's build hook points, a real HTTP receiver. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from '../../../kernel/app.js';
import { AFTER_MODEL_BUILD, AFTER_TRANSFORM, type ModelBuildContext, type ModelBuildStatus, type TransformRunContext } from '../../../sdk/index.js';
import type { QualityPluginService } from '../../../plugins/quality/index.js';

export function quality(app: App): QualityPluginService {
  return app.services.get<QualityPluginService>('quality');
}

/** Fires models.afterModelBuild for `schema.name` the way the models runner does after building it. */
export async function fireBuild(app: App, model: string, runId: string, assertions?: string[]): Promise<ModelBuildContext> {
  const [schema, name] = model.split('.');
  const b: ModelBuildContext = {
    model,
    schema,
    name,
    materialized: 'table',
    path: `transform/${name}.sql`,
    sql: `SELECT * FROM ${model}`,
    assertions,
    runId,
    status: 'built',
    durationMs: 1,
    extras: {},
    db: app.db,
  };
  await app.hookPoint(AFTER_MODEL_BUILD)!.promise(b);
  return b;
}

export async function fireTransformEnd(
  app: App,
  runId: string,
  results: Array<{ model: string; status: ModelBuildStatus; error?: string }>,
  status: 'success' | 'error' = results.some((r) => r.status === 'error') ? 'error' : 'success',
): Promise<TransformRunContext> {
  const run: TransformRunContext = { runId, trigger: 'test', targets: null, results: results.map((r) => ({ ...r, duration_ms: 1 })), status };
  await app.hookPoint(AFTER_TRANSFORM)!.promise(run);
  return run;
}

export interface Received {
  path: string;
  body: any;
  headers: http.IncomingHttpHeaders;
}

/** A real HTTP receiver on 127.0.0.1; `respond` decides each answer (default 200). */
export async function startReceiver(respond: (req: Received, n: number) => number | 'hang' = () => 200) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* keep the text */
      }
      const r: Received = { path: req.url ?? '', body, headers: req.headers };
      received.push(r);
      const answer = respond(r, received.length);
      if (answer === 'hang') return;
      res.writeHead(answer, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (a receiver that is down). */
export async function deadPort(): Promise<number> {
  const r = await startReceiver();
  await r.close();
  return r.port;
}
