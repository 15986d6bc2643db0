import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, conflict, definePlugin, FILES_SERVICE, MODELS_SERVICE, notFound, qualified, readNotebook, readYaml, type Caller, type FilesService, type PluginContext, type ProjectFileRead, type ProjectFileSaved } from '../../sdk/index.js';
import { assertReadableData, withSecretReferences } from './exposure.js';
import { guardFs, projectPath, protectedFileTest, servableLink } from './paths.js';
import { isHidden, languageOf, SAVEABLE_EXTENSIONS } from './rules.js';

interface TreeNode {
  name: string;
  path: string;
  type: 'file' | 'directory';
  size?: number;
  children?: TreeNode[];
}

const MAX_READ_BYTES = 5 * 1024 * 1024;

/** The project tree; a symlink is listed only when the file it reaches could be read (folders behind links are not followed). */
function tree(ctx: PluginContext, dir: string, isProtected = protectedFileTest(ctx)): TreeNode[] {
  const root = fs.realpathSync(ctx.project.root);
  const out: TreeNode[] = [];
  const entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || a.name.localeCompare(b.name));
  for (const e of entries) {
    if (isHidden(e.name)) continue;
    const abs = path.join(dir, e.name);
    const rel = path.relative(root, abs).split(path.sep).join('/');
    if (e.isSymbolicLink()) {
      if (servableLink(ctx, abs)) out.push({ name: e.name, path: rel, type: 'file', size: fs.statSync(abs).size });
    } else if (e.isDirectory()) out.push({ name: e.name, path: rel, type: 'directory', children: tree(ctx, abs, isProtected) });
    else if (e.isFile() && !isProtected(abs)) out.push({ name: e.name, path: rel, type: 'file', size: fs.statSync(abs).size });
  }
  return out;
}

/** Refuses content that would leave the project unloadable (project.yml, notebooks). */
function validateContent(rel: string, content: string): void {
  const ext = path.extname(rel).toLowerCase();
  if (ext === '.yml' || ext === '.yaml') readYaml(content, rel);
  if (ext === '.dpnb') readNotebook(content, rel);
}

/** The database object a file defines (model or seed), if any. */
async function objectOf(ctx: PluginContext, rel: string): Promise<{ schema: string; name: string } | null> {
  const models = ctx.services.find(MODELS_SERVICE);
  if (models) {
    const m = (await models.list().catch(() => [])).find((x) => x.path === rel);
    if (m) return { schema: m.schema, name: m.name };
    const s = (await models.seeds().catch(() => [])).find((x) => x.path === rel);
    if (s) return { schema: s.schema, name: s.name };
  }
  const model = /^transform\/([^/]+)\/([^/]+)\.sql$/.exec(rel);
  if (model) return { schema: model[1], name: model[2] };
  const seed = /^seeds\/([^/]+)\.csv$/.exec(rel);
  if (seed) return { schema: 'seeds', name: seed[1] };
  return null;
}

async function dropObject(ctx: PluginContext, obj: { schema: string; name: string }): Promise<string | null> {
  const found = await ctx.db.catalog.relation(obj.schema, obj.name);
  if (!found) return null;
  await ctx.db.run(`DROP ${found.kind === 'view' ? 'VIEW' : 'TABLE'} ${qualified(found.schema, found.name)}`);
  return `${obj.schema}.${obj.name}`;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Throws 400 `extension_not_allowed` unless a save may write files like `rel`. */
function assertSaveable(rel: string): void {
  const ext = path.extname(rel).toLowerCase();
  if (!SAVEABLE_EXTENSIONS.includes(ext)) {
    throw badRequest('extension_not_allowed', `Files ending in '${ext || '(none)'}' cannot be saved; allowed: ${SAVEABLE_EXTENSIONS.join(', ')}`, {
      path: rel,
      allowed: SAVEABLE_EXTENSIONS,
    });
  }
}

/** GET /api/files/* and the service's read. */
async function readFile(ctx: PluginContext, requested: string | undefined, caller: Caller): Promise<ProjectFileRead> {
  const { abs, rel, realRel } = projectPath(ctx, requested);
  const stat = guardFs(() => (fs.existsSync(abs) ? fs.statSync(abs) : null), rel);
  if (!stat || !stat.isFile()) throw notFound('file_not_found', `No file '${rel}'`, { path: rel });
  if (stat.size > MAX_READ_BYTES) throw badRequest('file_too_large', `'${rel}' is larger than 5 MiB`, { path: rel });
  const content = guardFs(() => fs.readFileSync(abs), rel);
  await assertReadableData(ctx, caller, { rel, realRel }, content);
  // sha256 of the bytes on disk: a save that passes it back is refused if the file changed since.
  return { path: rel, content: withSecretReferences(ctx, content.toString('utf8')), sha256: sha256(content) };
}

/** PUT /api/files/* and the service's write. */
function saveFile(ctx: PluginContext, requested: string | undefined, content: string, baseSha256: string | null | undefined): ProjectFileSaved {
  const { abs, rel } = projectPath(ctx, requested);
  assertSaveable(rel);
  if (guardFs(() => fs.existsSync(abs) && fs.statSync(abs).isDirectory(), rel)) throw badRequest('is_directory', `'${rel}' is a folder`, { path: rel });
  validateContent(rel, content);
  // A file past what a read opens could never be opened (nor rejoined together) again.
  const bytes = Buffer.byteLength(content);
  if (bytes > MAX_READ_BYTES) throw badRequest('file_too_large', `'${rel}' would be ${bytes} bytes, over the 5 MiB a file may have; nothing was written`, { path: rel, bytes, max_bytes: MAX_READ_BYTES });
  const created = !fs.existsSync(abs);
  if (baseSha256 !== undefined) {
    const current = created ? null : sha256(guardFs(() => fs.readFileSync(abs), rel));
    if (current !== baseSha256) {
      throw conflict('file_conflict', `'${rel}' changed since it was read (${created ? 'it no longer exists' : 'someone saved another version'}); reload it and apply your change again`, {
        path: rel,
        current_sha256: current,
      });
    }
  }
  guardFs(() => ctx.project.writeFile(rel, content), rel);
  ctx.log.info('file saved', { path: rel, bytes: Buffer.byteLength(content) });
  return { path: rel, created, sha256: sha256(Buffer.from(content, 'utf8')) };
}

function filesService(ctx: PluginContext): FilesService {
  return {
    check(requested, options = {}) {
      const { rel } = projectPath(ctx, requested);
      if (options.save) assertSaveable(rel);
      return rel;
    },
    read: (requested, caller) => readFile(ctx, requested, caller),
    write: (requested, content, options = {}) => saveFile(ctx, requested, content, options.baseSha256),
  };
}

export default definePlugin({
  setup(ctx) {
    ctx.services.provide(FILES_SERVICE, filesService(ctx));
    ctx.route({
      method: 'GET',
      url: '/api/files',
      permission: 'read',
      summary: 'The project file tree (secrets and database files left out)',
      handler: () => ({ root: ctx.project.config.name, children: guardFs(() => tree(ctx, fs.realpathSync(ctx.project.root))) }),
    });

    ctx.route<unknown, unknown, { '*': string }>({
      method: 'GET',
      url: '/api/files/*',
      permission: 'read',
      summary: 'Read a project file: {path, content, language}',
      handler: async (req) => {
        const file = await readFile(ctx, req.params['*'], req.caller);
        return { path: file.path, content: file.content, language: languageOf(file.path), sha256: file.sha256 };
      },
    });

    ctx.route<{ content: string; base_sha256?: string | null }, unknown, { '*': string }>({
      method: 'PUT',
      url: '/api/files/*',
      permission: 'write',
      summary: `Save a file atomically (extensions: ${SAVEABLE_EXTENSIONS.join(' ')}); with base_sha256, only if the file is still the version read`,
      bodyLimit: MAX_READ_BYTES,
      schema: {
        body: {
          type: 'object',
          required: ['content'],
          additionalProperties: false,
          properties: {
            content: { type: 'string' },
            base_sha256: { type: ['string', 'null'], description: 'The sha256 GET returned; 409 file_conflict when the file changed since (null: the file must not exist yet)' },
          },
        },
      },
      handler: (req) => {
        const saved = saveFile(ctx, req.params['*'], req.body.content, req.body.base_sha256);
        return { path: saved.path, saved: true, created: saved.created, language: languageOf(saved.path), sha256: saved.sha256 };
      },
    });

    ctx.route<unknown, { drop_object?: boolean }, { '*': string }>({
      method: 'DELETE',
      url: '/api/files/*',
      permission: 'write',
      summary: 'Delete a file; with drop_object=true also drop the table or view it defines',
      schema: { querystring: { type: 'object', properties: { drop_object: { type: 'boolean', default: false } } } },
      handler: async (req) => {
        const { abs, rel } = projectPath(ctx, req.params['*']);
        if (!guardFs(() => fs.existsSync(abs) && fs.statSync(abs).isFile(), rel)) throw notFound('file_not_found', `No file '${rel}'`, { path: rel });
        // Find the object before the file goes, while discovery still sees it.
        const obj = req.query.drop_object ? await objectOf(ctx, rel) : null;
        guardFs(() => fs.rmSync(abs), rel);
        const dropped = obj ? await dropObject(ctx, obj) : null;
        ctx.log.info('file deleted', { path: rel, dropped });
        return { path: rel, deleted: true, dropped_object: dropped };
      },
    });
  },
});
