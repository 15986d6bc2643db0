import type { Argv } from 'yargs';
import { badRequest } from '../sdk/errors.js';
import { usersCommands } from './auth/cli.js';
import { createCliIO } from './cli-io.js';
import { ACTIVE_ENV_FILE, buildConfig, databaseFile, loadProject, readActiveEnv, readProjectFile, writeActiveEnv } from './config.js';

/** Commands the kernel owns: serve, env, secrets, users, plugins. */
export function kernelCommands(y: Argv): Argv {
  return y
    .command(
      'serve',
      'Start the HTTP server, API and web UI',
      (s) =>
        s
          .option('port', { type: 'number', default: Number(process.env.DP_PORT ?? 3000), describe: 'Port to listen on' })
          .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to bind' })
          .option('auth', { type: 'boolean', default: false, describe: 'Require login and enforce roles' })
          .option('shutdown-grace', { type: 'number', default: 10, describe: 'Seconds in-flight requests get to finish on SIGTERM/SIGINT' }),
      async (argv) => {
        const { serve } = await import('./serve.js');
        await serve({
          projectRoot: argv.project as string,
          env: (argv.env as string) ?? null,
          port: argv.port,
          host: argv.host,
          auth: argv.auth,
          shutdownGraceSeconds: argv['shutdown-grace'] as number,
        });
      },
    )
    .command('env', 'Show, list, set or clear the persistent active environment', (s) =>
      s
        .command(
          'use <name>',
          `Make <name> the active environment (stored in ${ACTIVE_ENV_FILE})`,
          (c) => c.positional('name', { type: 'string', demandOption: true }),
          (argv) => {
            const root = argv.project as string;
            const { raw } = readProjectFile(root);
            buildConfig(raw, argv.name as string); // throws unknown_environment with the list
            writeActiveEnv(root, argv.name as string);
            createCliIO(false).out(`Active environment: ${argv.name}`);
          },
        )
        .command(
          'show',
          'Show the active environment and its database path',
          () => {},
          (argv) => {
            const p = loadProject(argv.project as string, (argv.env as string) ?? null);
            const io = createCliIO(Boolean(argv.json));
            const info = { active: p.env, available: Object.keys(p.config.environments), database_path: databaseFile(p) };
            if (io.wantsJson) io.json(info);
            else io.out(`active: ${info.active ?? '(none)'}\ndatabase: ${info.database_path}`);
          },
        )
        .command(
          'list',
          'List the environments project.yml defines',
          () => {},
          (argv) => {
            const root = argv.project as string;
            const { raw } = readProjectFile(root);
            const active = readActiveEnv(root);
            const io = createCliIO(Boolean(argv.json));
            const rows = Object.keys((raw.environments ?? {}) as object).map((name) => ({
              name,
              active: name === active,
              database_path: databaseFile({ ...loadProject(root, name) }),
            }));
            if (io.wantsJson) io.json(rows);
            else io.table(rows.map((r) => ({ ...r, active: r.active ? '*' : '' })));
          },
        )
        .command(
          'reset',
          'Clear the persistent active environment',
          () => {},
          (argv) => {
            writeActiveEnv(argv.project as string, null);
            createCliIO(false).out('Active environment cleared: the top-level database.path applies');
          },
        )
        .demandCommand(1, "Name a subcommand of 'env'"),
    )
    .command('secrets', 'List, set or delete secrets in .env', (s) =>
      s
        .command(
          'list',
          'List secret keys (values masked)',
          () => {},
          async (argv) => {
            const { EnvSecretsStore } = await import('./secrets.js');
            const io = createCliIO(Boolean(argv.json));
            const rows = new EnvSecretsStore(loadProject(argv.project as string, (argv.env as string) ?? null).root, () => {}).list();
            if (io.wantsJson) io.json(rows);
            else io.table(rows);
          },
        )
        .command(
          'set <key> [value]',
          'Set a secret (reads the value from stdin when omitted, so it stays out of shell history)',
          (c) => c.positional('key', { type: 'string', demandOption: true }).positional('value', { type: 'string' }),
          async (argv) => {
            const { EnvSecretsStore } = await import('./secrets.js');
            let value = argv.value as string | undefined;
            if (value === undefined) {
              const chunks: Buffer[] = [];
              for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
              value = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
            }
            await new EnvSecretsStore(loadProject(argv.project as string).root, () => {}).set(argv.key as string, value);
            createCliIO(false).out(`Secret ${argv.key} saved to .env`);
          },
        )
        .command(
          'delete <key>',
          'Delete a secret from .env',
          (c) => c.positional('key', { type: 'string', demandOption: true }),
          async (argv) => {
            const { EnvSecretsStore } = await import('./secrets.js');
            const removed = await new EnvSecretsStore(loadProject(argv.project as string).root, () => {}).delete(argv.key as string);
            if (!removed) throw badRequest('secret_not_found', `No secret '${argv.key}' in .env`);
            createCliIO(false).out(`Secret ${argv.key} deleted`);
          },
        )
        .demandCommand(1, "Name a subcommand of 'secrets'"),
    )
    .command('users', 'Manage users directly on the database (first admin, recovery)', (s) => usersCommands(s))
    .command(
      'plugins',
      'List enabled and disabled plugins',
      () => {},
      async (argv) => {
        const { discoverPlugins } = await import('./plugins.js');
        const p = loadProject(argv.project as string, (argv.env as string) ?? null);
        const { enabled, disabled } = discoverPlugins({ projectRoot: p.root, paths: p.config.plugins.paths, disable: p.config.plugins.disable });
        const io = createCliIO(Boolean(argv.json));
        const rows = [
          ...enabled.map((x) => ({ name: x.manifest.name, version: x.manifest.version, status: 'enabled', description: x.manifest.description ?? '' })),
          ...disabled.map((x) => ({ name: x.manifest.name, version: x.manifest.version, status: 'disabled', description: x.manifest.description ?? '' })),
        ];
        if (io.wantsJson) io.json(rows);
        else io.table(rows);
      },
    );
}
