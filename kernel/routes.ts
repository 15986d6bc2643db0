import path from 'node:path';
import type { Caller } from '../sdk/auth.js';
import { errorMessage } from '../sdk/errors.js';
import type { RouteDefinition } from '../sdk/plugin.js';
import type { App } from './app.js';
import { databaseFile } from './config.js';

/** Routes the kernel itself serves: environment switching and plugin introspection. */
export function kernelRoutes(app: App): RouteDefinition[] {
  /**
   * The database file as the project names it: project-relative when inside the project; a file
   * outside it is shown as project.yml writes it to admins only (the others get its name), so no
   * answer carries the machine's folders.
   */
  const shownDatabasePath = (caller: Caller | undefined): string => {
    const file = databaseFile(app.project);
    if (file === ':memory:') return file;
    const rel = path.relative(app.project.root, file);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
    return caller?.role === 'admin' ? app.project.config.database.path : path.basename(file);
  };
  const environment = (caller: Caller | undefined) => ({
    active: app.project.env,
    available: Object.keys(app.project.config.environments),
    database_path: shownDatabasePath(caller),
  });
  return [
    {
      method: 'GET',
      url: '/api/environment',
      permission: 'read',
      summary: 'Active environment, available environments and the database file (project-relative)',
      schema: {
        response: {
          200: {
            type: 'object',
            properties: { active: { type: ['string', 'null'] }, available: { type: 'array', items: { type: 'string' } }, database_path: { type: 'string' } },
          },
        },
      },
      handler: (req) => environment(req.caller),
    },
    {
      method: 'PUT',
      url: '/api/environment/:env_name',
      // Admin only: a switch changes the database every caller works on.
      permission: 'manage_environment',
      summary: 'Switch the active environment (reopens the database) and remember it in .service-env (admin)',
      schema: { params: { type: 'object', properties: { env_name: { type: 'string', minLength: 1 } }, required: ['env_name'] } },
      handler: async (req) => {
        await app.switchEnvironment((req.params as { env_name: string }).env_name);
        app.log.info('environment switched', { env: app.project.env });
        return environment(req.caller);
      },
    },
    {
      method: 'GET',
      url: '/api/plugins',
      permission: 'read',
      summary: 'Enabled and disabled plugins with what they contribute',
      handler: () => ({
        enabled: app.plugins.map((p) => ({ name: p.manifest.name, version: p.manifest.version, description: p.manifest.description ?? '', contributes: p.manifest.contributes ?? {} })),
        disabled: app.disabledPlugins.map((p) => p.manifest.name),
      }),
    },
    {
      method: 'GET',
      url: '/api/health',
      permission: 'public',
      summary: 'Liveness: the server answers and the database opens',
      handler: async () => {
        try {
          await app.db.value('SELECT 1');
          return { status: 'ok', project: app.project.config.name, environment: app.project.env };
        } catch (e) {
          return { status: 'error', error: errorMessage(e) };
        }
      },
    },
  ];
}
