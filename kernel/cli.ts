import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Argv } from 'yargs';
import { LOCAL_ADMIN } from '../sdk/auth.js';
import { badRequest, errorMessage, isDpError } from '../sdk/errors.js';
import type { ManifestCommand, ManifestOption, PluginManifest } from '../sdk/plugin.js';
import { createCliIO } from './cli-io.js';
import { readProjectFile } from './config.js';
import { discoverPlugins } from './plugins.js';
import { SERVER_FILE } from './server-file.js';

/** Kernel commands that run without loading any plugin (recovery must work with a broken plugin). */
const PLUGIN_FREE_COMMANDS = ['env', 'secrets', 'users', 'plugins', 'login', 'logout'];

type Yargs = typeof import('yargs').default;

/**
 * yargs from the one-file bundle the build makes (dist/vendor/yargs.mjs: half the load time of
 * its 40 modules, paid by every command), or the package when there is no bundle.
 */
async function loadYargs(): Promise<{ yargs: Yargs; hideBin: (argv: string[]) => string[] }> {
  try {
    return (await import(new URL('../vendor/yargs.mjs', import.meta.url).href)) as { yargs: Yargs; hideBin: (argv: string[]) => string[] };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    const [{ default: yargs }, { hideBin }] = await Promise.all([import('yargs'), import('yargs/helpers')]);
    return { yargs, hideBin };
  }
}

/** The kernel's own top-level commands (kernel/commands.ts). */
const KERNEL_COMMANDS = ['serve', 'env', 'secrets', 'users', 'plugins', 'login', 'logout'];

/**
 * The top-level command argv runs, when nothing but dp's global options comes before it and it
 * asks for no help or version: then yargs needs that command alone, not the other fifty (their
 * declarations and the help text yargs renders for every run cost a start about 60 ms of CPU).
 * Undefined when in doubt (an unknown option first, `--help`): then every command is declared.
 */
export function invokedCommand(argv: string[]): string | undefined {
  if (argv.some((a) => a === '--help' || a === '-h' || a === '--version' || a === 'help')) return undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--project' || a === '--env') i++;
    else if (/^--(project|env)=/.test(a) || /^--(no-)?json(=.*)?$/.test(a)) continue;
    else return a.startsWith('-') ? undefined : a;
  }
  return undefined;
}

/** Finds --project / --env in argv before yargs runs, to know which plugins are enabled. */
function preScan(argv: string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${flag}`) return argv[i + 1];
    if (argv[i].startsWith(`--${flag}=`)) return argv[i].slice(flag.length + 3);
  }
  return undefined;
}

/** Manifests of the plugins enabled for this project (all built-ins when there is no project here). */
function enabledManifests(projectRoot: string): PluginManifest[] {
  let disable: string[] = [];
  let paths: string[] = [];
  if (fs.existsSync(path.join(projectRoot, 'project.yml'))) {
    try {
      const { raw } = readProjectFile(projectRoot);
      const plugins = (raw.plugins ?? {}) as { disable?: string[]; paths?: string[] };
      disable = plugins.disable ?? [];
      paths = plugins.paths ?? [];
    } catch {
      // A broken project.yml is reported when a command loads it; help still works.
    }
  }
  return discoverPlugins({ projectRoot, paths, disable }).enabled.map((p) => p.manifest);
}

function applyOptions(y: Argv, options?: Record<string, ManifestOption>, positionals?: Record<string, ManifestOption>): Argv {
  for (const [name, spec] of Object.entries(positionals ?? {})) y = y.positional(name, spec as never);
  for (const [name, spec] of Object.entries(options ?? {})) y = y.option(name, spec as never);
  return y;
}

/**
 * Runs a command inside a booted (non-serving) App. `activate` names the plugins whose command it
 * is: only they and what they need load (BootOptions.activate); absent, every enabled plugin does.
 */
export async function runInApp(argv: Record<string, any>, fn: (app: import('./app.js').App) => Promise<number | void>, activate?: string[]): Promise<void> {
  const { App } = await import('./app.js');
  const app = await App.boot({ projectRoot: argv.project, env: argv.env ?? null, activate });
  try {
    const code = await fn(app);
    process.exitCode = typeof code === 'number' ? code : 0;
  } finally {
    await app.close();
  }
}

/**
 * One declaration per top-level command name: a command another plugin extends with an option
 * (`whenOption`, e.g. versioning's `diff --snapshot` beside models' `diff`) becomes one command
 * with every plugin's options; `alternatives` lists the options that pick another handler.
 */
/** The plugin that handles each top-level command key (`diff`, `diff --snapshot`): the one a command activates. */
function commandOwners(manifests: PluginManifest[]): Map<string, string> {
  const owners = new Map<string, string>();
  for (const m of manifests) {
    for (const cmd of m.contributes?.commands ?? []) {
      const name = cmd.command.split(' ')[0];
      owners.set(cmd.whenOption ? `${name} --${cmd.whenOption}` : name, m.name);
    }
  }
  return owners;
}

function mergeExtendedCommands(manifests: PluginManifest[]): Array<{ cmd: ManifestCommand; alternatives: string[] }> {
  const byName = new Map<string, ManifestCommand[]>();
  for (const m of manifests) {
    for (const cmd of m.contributes?.commands ?? []) {
      const name = cmd.command.split(' ')[0];
      byName.set(name, [...(byName.get(name) ?? []), cmd]);
    }
  }
  const out: Array<{ cmd: ManifestCommand; alternatives: string[] }> = [];
  for (const group of byName.values()) {
    const extensions = group.filter((c) => c.whenOption);
    const bases = group.filter((c) => !c.whenOption);
    if (!extensions.length) {
      for (const cmd of bases) out.push({ cmd, alternatives: [] });
      continue;
    }
    const base = bases[0] ?? extensions[0];
    let options = { ...(base.options ?? {}) };
    for (const e of extensions) options = { ...options, ...(e.options ?? {}) };
    out.push({ cmd: { ...base, options }, alternatives: extensions.map((e) => e.whenOption!) });
    for (const extra of bases.slice(1)) out.push({ cmd: extra, alternatives: [] });
  }
  return out;
}

/** A throwaway project for a command that runs before there is one (its database is never opened unless used). */
function emptyProject(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-noproject-'));
  fs.writeFileSync(path.join(dir, 'project.yml'), 'name: none\ndatabase:\n  path: none.duckdb\n');
  return dir;
}

/** Sends the command to the project's running server, if one holds the database; 'local' when the CLI should open it itself. */
async function runThroughServer(argv: Record<string, any>, key: string): Promise<'ran' | 'local'> {
  const root = path.resolve(String(argv.project));
  if (!fs.existsSync(path.join(root, 'project.yml'))) return 'local';
  // No server file, no server: the relay's module (and node:readline behind it) is not loaded. (lstat: a
  // dangling link is still something remote.ts reports.)
  if (fs.lstatSync(path.join(root, SERVER_FILE), { throwIfNoEntry: false }) === undefined) return 'local';
  const { findLiveServer, runInServer } = await import('./remote.js');
  const server = await findLiveServer(root, (m) => process.stderr.write(`warning: ${m}\n`));
  return server ? runInServer(server, key, argv) : 'local';
}

/** What runs a parsed plugin command: the CLI's own (`runHere`), or an in-process runner (sdk/testing runCommand). */
export type ManifestCommandRunner = (
  argv: Record<string, any>,
  command: { key: string; pathKey: string; chosen: string | undefined; alternatives: string[]; owner: string | undefined; manifest: ManifestCommand },
) => Promise<void>;

/** The handler of a command whose plugin did not register it: the alternatives' hint, or an error. */
export function missingHandler(command: { key: string; pathKey: string; chosen: string | undefined; alternatives: string[] }): Error {
  if (!command.chosen && command.alternatives.length) {
    return badRequest('option_required', `'dp ${command.pathKey}' needs ${command.alternatives.map((o) => `--${o}`).join(' or ')} here (the plugin that handles it otherwise is disabled)`);
  }
  return new Error(`No handler for command '${command.key}' (its plugin did not register one)`);
}

/** The CLI's runner: through the running server when one holds the database, else in an App that loads only what the command needs. */
const runHere: ManifestCommandRunner = async (argv, { key, chosen, alternatives, pathKey, owner, manifest: cmd }) => {
  // While `dp serve` holds this project's database, the command runs in it (docs/cli.md).
  if (!cmd.withoutProject && !cmd.runsBesideServer && (await runThroughServer(argv, key)) === 'ran') return;
  const scaffold = cmd.withoutProject && !fs.existsSync(path.join(path.resolve(String(argv.project)), 'project.yml')) ? emptyProject() : null;
  if (scaffold) argv = { ...argv, project: scaffold };
  try {
    await runInApp(
      argv,
      async (app) => {
        const entry = app.commands.get(key);
        if (!entry) throw missingHandler({ key, pathKey, chosen, alternatives });
        const io = createCliIO(Boolean(argv.json), LOCAL_ADMIN);
        return entry.handler(argv, io);
      },
      owner ? [owner] : [],
    );
  } finally {
    if (scaffold) fs.rmSync(scaffold, { recursive: true, force: true });
  }
};

function addManifestCommand(y: Argv, cmd: ManifestCommand, parents: string[], alternatives: string[], owners: Map<string, string>, run: ManifestCommandRunner): Argv {
  const name = cmd.command.split(' ')[0];
  const pathKey = [...parents, name].join(' ');
  return y.command(
    cmd.command,
    cmd.describe,
    (sub) => {
      let s = applyOptions(sub, cmd.options, cmd.positionals);
      for (const child of cmd.commands ?? []) s = addManifestCommand(s, child, [...parents, name], [], owners, run);
      if (cmd.commands?.length) s = s.demandCommand(1, `Name a subcommand of '${pathKey}'`);
      return s;
    },
    cmd.commands?.length
      ? undefined
      : async (argv) => {
          const chosen = alternatives.find((o) => argv[o] !== undefined && argv[o] !== false);
          // The key its handler is registered under (app.ts commandKey).
          const key = chosen ? `${pathKey} --${chosen}` : pathKey;
          const top = pathKey.split(' ')[0];
          await run(argv, { key, pathKey, chosen, alternatives, owner: owners.get(chosen ? `${top} --${chosen}` : top), manifest: cmd });
        },
  );
}

/**
 * dp's global options and every plugin command of `manifests` on a yargs instance, each parsed
 * command handed to `run`. The CLI adds the kernel's commands; tests run plugin commands in process.
 */
export function withManifestCommands(y: Argv, manifests: PluginManifest[], run: ManifestCommandRunner, only?: string): Argv {
  y = y
    .scriptName('dp')
    .usage('$0 <command> [options]\n\ndp: a local data-pipeline workbench on one embedded DuckDB file.')
    .option('project', { type: 'string', describe: 'Project folder (holds project.yml)', default: process.cwd(), defaultDescription: 'current folder', global: true })
    .option('env', { type: 'string', describe: 'Environment to use for this command (overrides .service-env)', global: true })
    .option('json', { type: 'boolean', describe: 'Print data as JSON', default: false, global: true })
    .strict()
    .demandCommand(1, 'Name a command; dp --help lists them')
    .recommendCommands();
  const owners = commandOwners(manifests);
  for (const { cmd, alternatives } of mergeExtendedCommands(manifests)) {
    if (only === undefined || cmd.command.split(' ')[0] === only) y = addManifestCommand(y, cmd, [], alternatives, owners, run);
  }
  return y;
}

export { loadYargs };

export async function main(argv?: string[]): Promise<void> {
  const { yargs, hideBin } = await loadYargs();
  const rawArgv = argv ?? hideBin(process.argv);
  const projectRoot = path.resolve(preScan(rawArgv, 'project') ?? process.cwd());
  let y: Argv = yargs(rawArgv)
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .fail((msg, err) => {
      if (err) throw err;
      process.stderr.write(`error: ${msg}\nRun 'dp --help' for usage.\n`);
      process.exit(1);
    });
  // yargs renders the run command's whole help right after starting its handler, in case the
  // handler asks for it; none does (a failure prints its own line), so that work is skipped.
  const usage = (y as unknown as { getInternalMethods(): { getUsageInstance(): { cacheHelpMessage(): void } } }).getInternalMethods().getUsageInstance();
  usage.cacheHelpMessage = () => {};
  let manifests: PluginManifest[] = [];
  try {
    manifests = enabledManifests(projectRoot);
  } catch (e) {
    // A broken plugin must not lock the user out of the commands that repair things.
    const first = rawArgv.find((a) => !a.startsWith('-'));
    process.stderr.write(`error: ${errorMessage(e)}\n`);
    if (!first || !PLUGIN_FREE_COMMANDS.includes(first)) {
      process.exitCode = 1;
      return;
    }
  }
  // A plugin command alone when argv names one; every command otherwise (help, a typo's suggestion).
  const invoked = invokedCommand(rawArgv);
  const only = invoked && !KERNEL_COMMANDS.includes(invoked) && manifests.some((m) => m.contributes?.commands?.some((c) => c.command.split(' ')[0] === invoked)) ? invoked : undefined;
  // The kernel's commands (and the user store's CLI behind them) load only when they may run.
  if (only === undefined) y = (await import('./commands.js')).kernelCommands(y);
  y = withManifestCommands(y, manifests, runHere, only);
  try {
    await y.parseAsync();
  } catch (e) {
    process.stderr.write(`error: ${isDpError(e) ? e.message : errorMessage(e)}\n`);
    if (process.env.DP_DEBUG && e instanceof Error) process.stderr.write((e.stack ?? '') + '\n');
    process.exitCode = 1;
  }
}
