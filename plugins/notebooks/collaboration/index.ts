/**
 * Real-time collaboration on project files: `/ws/collaborate?doc=<path>` (Yjs sync and
 * awareness, y-websocket framing: protocol.ts), `POST /api/notebooks/collaborate/save` and
 * `GET /api/notebooks/collaborate` (the open documents). The notebooks plugin calls
 * registerCollaboration(ctx) in its setup.
 */
import { FILES_SERVICE, type PluginContext } from '../../../sdk/index.js';
import { COLLABORATION_CONFIG } from './config.js';
import type { CollaborationHub } from './hub.js';

export { COLLABORATION_CONFIG } from './config.js';
export { collaborationErrors } from './errors.js';

const docOf = (query: unknown) => (query as { doc?: unknown } | undefined)?.doc;

export function registerCollaboration(ctx: PluginContext): void {
  const { idle_release_seconds } = ctx.config(COLLABORATION_CONFIG);
  // The hub (Yjs and its protocols) loads when the server starts, not at setup: a CLI command
  // that loads this plugin never serves a socket (docs/plugins.md "Activation on demand").
  let hub!: CollaborationHub;
  ctx.onStart(async () => {
    if (!ctx.serving || hub) return;
    const { CollaborationHub } = await import('./hub.js');
    hub = new CollaborationHub({ files: () => ctx.services.get(FILES_SERVICE), log: ctx.log, idleReleaseMs: idle_release_seconds * 1000, clock: ctx.clock });
  });

  ctx.route({
    kind: 'websocket',
    method: 'GET',
    url: '/ws/collaborate',
    permission: 'read',
    summary: 'Edit a project file together: Yjs sync and awareness (y-websocket framing); ?doc=<project-relative path>. Viewers join read-only.',
    tokenInFirstMessage: true,
    accept: (req) => void hub.checkDoc(docOf(req.query)),
    handler: (socket, req) => hub.join(socket, docOf(req.query), req.caller),
  });

  ctx.route<{ doc: string; force?: boolean }>({
    method: 'POST',
    url: '/api/notebooks/collaborate/save',
    permission: 'write',
    summary: 'Save the shared document of a file being edited together (written atomically through the files service)',
    schema: {
      body: {
        type: 'object',
        required: ['doc'],
        additionalProperties: false,
        properties: {
          doc: { type: 'string', description: 'Project-relative file path, as in ?doc=' },
          force: { type: 'boolean', description: 'Write even when the file changed on disk since the document was opened or last saved (else 409 file_conflict)' },
        },
      },
    },
    handler: (req) => hub.save(req.body.doc, req.body.force === true),
  });

  ctx.route({
    method: 'GET',
    url: '/api/notebooks/collaborate',
    permission: 'read',
    summary: 'The documents being edited together: {documents: [{doc, clients, unsaved}]}',
    handler: () => ({ documents: hub.list() }),
  });

  ctx.onBeforeStop(() => hub?.close());
}
