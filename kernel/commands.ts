import type { Argv } from 'yargs';
import { badRequest, DpError, notFound } from '../sdk/errors.js';
import { usersCommands } from './auth/cli.js';
import { createCliIO } from './cli-io.js';
import { ACTIVE_ENV_FILE, buildConfig, databaseFile, loadProject, readActiveEnv, readProjectFile, writeActiveEnv } from './config.js';

/** The running server of the project at `root` (for dp login), or a no_server error. */
async function requireServer(root: string) {
  const { findLiveServer } = await import('./remote.js');
  const server = await findLiveServer(root, (m) => process.stderr.write(`warning: ${m}\n`));
  if (!server) throw new DpError(409, 'no_server', "No running dp serve of this project (start 'dp serve --auth' first)", {});
  return server;
}

/** Commands the kernel owns: serve, env, secrets, users, plugins, login, logout. */
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
          .option('shutdown-grace', { type: 'number', default: 10, describe: 'Seconds in-flight requests get to finish on SIGTERM/SIGINT' })
          .option('scheduler', { type: 'boolean', default: true, describe: 'Run cron schedules (--no-scheduler: streams and jobs run only when asked, as tests need)' }),
      async (argv) => {
        const { serve } = await import('./serve.js');
        await serve({
          projectRoot: argv.project as string,
          env: (argv.env as string) ?? null,
          port: argv.port,
          host: argv.host,
          auth: argv.auth,
          shutdownGraceSeconds: argv['shutdown-grace'] as number,
          scheduler: argv.scheduler as boolean,
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
            if (!removed) throw notFound('secret_not_found', `No secret '${argv.key}' in .env`);
            createCliIO(false).out(`Secret ${argv.key} deleted`);
          },
        )
        .demandCommand(1, "Name a subcommand of 'secrets'"),
    )
    .command('users', 'Manage users (first admin, recovery; through the running server while one runs)', (s) => usersCommands(s))
    .command(
      'login',
      "Log in to this project's running dp serve --auth, so CLI commands run as you (token kept in your config folder, not the project)",
      (s) =>
        s
          .option('username', { type: 'string', describe: 'Your username (asked when absent)' })
          .option('password-stdin', { type: 'boolean', default: false, describe: 'Read the password from the first line of stdin (scripts)' }),
      async (argv) => {
        const remote = await import('./remote.js');
        const server = await requireServer(argv.project as string);
        const username = (argv.username as string | undefined) ?? (process.stdin.isTTY ? await remote.readLine('Username: ') : undefined);
        if (!username) throw badRequest('username_required', 'Pass --username (stdin is not a terminal to ask on)', { field: 'username' });
        if (!argv['password-stdin'] && !process.stdin.isTTY) throw badRequest('password_required', 'Pass --password-stdin and pipe the password (stdin is not a terminal to ask on)', { field: 'password' });
        const password = await remote.readLine('Password: ', { secret: true });
        const entry = await remote.login(server, username, password);
        const io = createCliIO(Boolean(argv.json));
        if (io.wantsJson) io.json({ username: entry.username, role: entry.role, expires_at: entry.expires_at, server: server.url });
        else io.out(`Logged in to ${server.url} as ${entry.username} (${entry.role})`);
      },
    )
    .command(
      'logout',
      "Log out of this project's running server and forget the stored token",
      () => {},
      async (argv) => {
        const remote = await import('./remote.js');
        const root = argv.project as string;
        const server = await remote.findLiveServer(root);
        const who = await remote.logout(server, root);
        createCliIO(false).out(who ? `Logged out ${who}` : 'No stored login for this project');
      },
    )
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
