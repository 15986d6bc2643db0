import { errorMessage } from '../sdk/errors.js';
import type { RouteDefinition } from '../sdk/plugin.js';
import type { App } from './app.js';
import { databaseFile } from './config.js';

/** Routes the kernel itself serves: environment switching and plugin introspection. */
export function kernelRoutes(app: App): RouteDefinition[] {
  const environment = () => ({
    active: app.project.env,
    available: Object.keys(app.project.config.environments),
    database_path: databaseFile(app.project),
  });
  return [
    {
      method: 'GET',
      url: '/api/environment',
      permission: 'read',
      summary: 'Active environment, available environments and the database path',
      schema: {
        response: {
          200: {
            type: 'object',
            properties: { active: { type: ['string', 'null'] }, available: { type: 'array', items: { type: 'string' } }, database_path: { type: 'string' } },
          },
        },
      },
      handler: () => environment(),
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
        return environment();
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
