import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Argv } from 'yargs';
import { ROLES } from '../../sdk/auth.js';
import { createCliIO } from '../cli-io.js';
import { databaseFile, loadProject } from '../config.js';
import type { LiveServer } from '../remote.js';
import { checkNewUser, checkUserChanges, type UserRecord, type UserStore } from './users.js';

/** The first line of stdin: a password typed at a prompt or piped in, never in shell history. */
async function readPasswordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password: ');
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  try {
    for await (const line of rl) return line;
    return '';
  } finally {
    rl.close();
  }
}

/** What `dp users` needs: the user store itself, or the running server's /api/users. */
type Users = Pick<UserStore, 'list' | 'create' | 'update' | 'remove'>;

/**
 * The user store through the admin routes of the server that holds it. The store's own checks
 * run here first, so bad input is reported as it is offline; the server checks the caller's role.
 */
function usersThroughServer(server: LiveServer, call: typeof import('../remote.js').callServer): Users {
  const at = (username: string) => `/api/users/${encodeURIComponent(username)}`;
  return {
    list: async () => (await call(server, 'GET', '/api/users')) as UserRecord[],
    create: async (input) => (await call(server, 'POST', '/api/users', checkNewUser(input))) as UserRecord,
    update: async (username, changes) => (await call(server, 'PUT', at(username), checkUserChanges(changes))) as UserRecord,
    remove: async (username) => {
      await call(server, 'DELETE', at(username));
    },
  };
}

/**
 * Runs fn against the project's user store. While `dp serve` holds it (DuckDB lets one process
 * open the file), through that server as this CLI user (docs/cli.md). Otherwise directly, with
 * no server and no plugin code loaded: this is how the first admin is created and how access is
 * recovered, so a plugin that fails at setup must not stand in the way.
 */
async function withUsers(argv: Record<string, any>, fn: (users: Users) => Promise<number | void>): Promise<void> {
  const root = path.resolve(String(argv.project));
  if (fs.existsSync(path.join(root, 'project.yml'))) {
    const { findLiveServer, callServer } = await import('../remote.js');
    const server = await findLiveServer(root, (m) => process.stderr.write(`warning: ${m}\n`));
    if (server) {
      const code = await fn(usersThroughServer(server, callServer));
      process.exitCode = typeof code === 'number' ? code : 0;
      return;
    }
  }
  // Loaded here, not at the top: `dp --help` must not pay for DuckDB's native module.
  const [{ DuckDatabase }, { openUserStore, tokenTtlDays }] = await Promise.all([import('../database.js'), import('./index.js')]);
  const project = loadProject(argv.project as string, (argv.env as string) ?? null);
  const ttlMs = tokenTtlDays(project.config.raw) * 24 * 60 * 60 * 1000;
  // The environment database is opened only for the one-time import of users kept there by
  // earlier versions (and only when the store has never imported).
  let legacy: InstanceType<typeof DuckDatabase> | null = null;
  const store = openUserStore(project.root, () => (legacy = new DuckDatabase(databaseFile(project), { sandbox: { allowedDirectories: [project.root] } })), () => ttlMs);
  try {
    const code = await fn(store.users);
    process.exitCode = typeof code === 'number' ? code : 0;
  } finally {
    store.db.close();
    (legacy as InstanceType<typeof DuckDatabase> | null)?.close();
  }
}

function printUser(io: ReturnType<typeof createCliIO>, user: UserRecord, verb: string): void {
  if (io.wantsJson) io.json(user);
  else io.out(`User ${user.username} (${user.role}) ${verb}`);
}

/** `dp users add/list/remove/set-role/set-password`: user management on the store, or through the running server. */
export function usersCommands(s: Argv): Argv {
  return s
    .command(
      'list',
      'List users (no passwords)',
      () => {},
      (argv) =>
        withUsers(argv, async (users) => {
          const io = createCliIO(Boolean(argv.json));
          const list = await users.list();
          if (io.wantsJson) io.json(list);
          else io.table(list as unknown as Array<Record<string, unknown>>, ['username', 'role', 'display_name', 'created_at', 'last_login']);
        }),
    )
    .command(
      'add <username>',
      'Create a user (reads the password from stdin unless --password is given)',
      (c) =>
        c
          .positional('username', { type: 'string', demandOption: true })
          .option('role', { type: 'string', choices: ROLES as string[], demandOption: true, describe: 'viewer, editor or admin' })
          .option('password', { type: 'string', describe: 'Password (prefer stdin: this stays in shell history)' })
          .option('display-name', { type: 'string', describe: 'Name shown in the UI' }),
      (argv) =>
        withUsers(argv, async (users) => {
          const password = argv.password ?? (await readPasswordFromStdin());
          const user = await users.create({ username: argv.username, password, role: argv.role, display_name: argv['display-name'] });
          printUser(createCliIO(Boolean(argv.json)), user, 'created');
        }),
    )
    .command(
      'remove <username>',
      'Delete a user and revoke their tokens',
      (c) => c.positional('username', { type: 'string', demandOption: true }),
      (argv) =>
        withUsers(argv, async (users) => {
          await users.remove(argv.username as string);
          const io = createCliIO(Boolean(argv.json));
          if (io.wantsJson) io.json({ deleted: argv.username });
          else io.out(`User ${argv.username} deleted; their tokens are revoked`);
        }),
    )
    .command(
      'set-role <username> <role>',
      "Change a user's role (revokes their tokens)",
      (c) => c.positional('username', { type: 'string', demandOption: true }).positional('role', { type: 'string', choices: ROLES as string[], demandOption: true }),
      (argv) =>
        withUsers(argv, async (users) => {
          const user = await users.update(argv.username as string, { role: argv.role });
          printUser(createCliIO(Boolean(argv.json)), user, 'updated; their tokens are revoked');
        }),
    )
    .command(
      'set-password <username>',
      "Reset a user's password (reads stdin unless --password is given; revokes their tokens)",
      (c) => c.positional('username', { type: 'string', demandOption: true }).option('password', { type: 'string', describe: 'New password (prefer stdin)' }),
      (argv) =>
        withUsers(argv, async (users) => {
          const password = argv.password ?? (await readPasswordFromStdin());
          const user = await users.update(argv.username as string, { password });
          printUser(createCliIO(Boolean(argv.json)), user, 'updated; their tokens are revoked');
        }),
    )
    .demandCommand(1, "Name a subcommand of 'users'");
}
