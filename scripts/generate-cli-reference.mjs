// Writes plugins/catalog/wiki/cli-reference.md, the wiki's CLI reference, from the same yargs tree
// `dp` builds (kernel commands plus every built-in plugin's manifest commands): each command's
// `--help` text as dp prints it, so the page cannot drift from the code. Run by scripts/build.mjs.
import fs from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import yargs from 'yargs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = (p) => pathToFileURL(join(root, 'dist', p)).href;
const { kernelCommands } = await import(dist('kernel/commands.js'));
const { discoverPlugins } = await import(dist('kernel/plugins.js'));

const manifests = discoverPlugins({ projectRoot: os.tmpdir(), paths: [], disable: [] }).enabled.map((p) => p.manifest);

/** The same builder kernel/cli.ts uses for manifest commands, without handlers (help only). */
function addManifestCommand(y, cmd) {
  return y.command(cmd.command, cmd.describe, (sub) => {
    let s = sub;
    for (const [name, spec] of Object.entries(cmd.positionals ?? {})) s = s.positional(name, spec);
    for (const [name, spec] of Object.entries(cmd.options ?? {})) s = s.option(name, spec);
    for (const child of cmd.commands ?? []) s = addManifestCommand(s, child);
    return s;
  });
}

function cli() {
  let y = yargs([])
    .scriptName('dp')
    .usage('$0 <command> [options]\n\ndp: a local data-pipeline workbench on one embedded DuckDB file.')
    .option('project', { type: 'string', describe: 'Project folder (holds project.yml)', default: '.', defaultDescription: 'current folder', global: true })
    .option('env', { type: 'string', describe: 'Environment to use for this command (overrides .service-env)', global: true })
    .option('json', { type: 'boolean', describe: 'Print data as JSON', default: false, global: true })
    .wrap(100)
    .exitProcess(false);
  y = kernelCommands(y);
  for (const m of manifests) for (const cmd of m.contributes?.commands ?? []) y = addManifestCommand(y, cmd);
  return y;
}

function help(args) {
  return new Promise((resolve) => {
    cli().parse([...args, '--help'], (_err, _argv, output) => resolve(output.trimEnd()));
  });
}

/** Command paths in the order dp --help shows them, subcommands after their parent. */
async function commandPaths() {
  const paths = [];
  const walk = async (prefix) => {
    const text = await help(prefix);
    const section = text.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
    for (const line of section.split('\n')) {
      const m = /^\s+dp ((?:[a-z][\w-]*\s?)+)/.exec(line);
      if (!m) continue;
      const words = m[1].trim().split(/\s+/);
      const next = words.slice(0, prefix.length + 1);
      if (next.length !== prefix.length + 1 || paths.some((p) => p.join(' ') === next.join(' '))) continue;
      paths.push(next);
      await walk(next);
    }
  };
  await walk([]);
  return paths;
}

const global = (text) => text.replace(/\n\s+--(help|version|project|env|json)\b.*(\n\s{20,}.*)*/g, '').replace(/\n+Options:$/, '');
const paths = await commandPaths();
const out = [
  '---',
  'title: CLI reference',
  'category: Reference',
  'order: 100',
  '---',
  '# CLI reference',
  '',
  'Every `dp` command, with its `--help` text (this page is generated from the commands themselves).',
  'All commands take `--project <folder>` (default: the current folder), `--env <name>` (the environment',
  'for this command) and `--json` (print data as JSON). Exit code 0 means success, 1 an error.',
  '',
  '```text',
  (await help([])).trimEnd(),
  '```',
  '',
];
for (const p of paths) {
  out.push(`## dp ${p.join(' ')}`, '', '```text', global(await help(p)), '```', '');
}
const target = join(root, 'plugins', 'catalog', 'wiki', 'cli-reference.md');
const text = out.join('\n');
if (!fs.existsSync(target) || fs.readFileSync(target, 'utf8') !== text) fs.writeFileSync(target, text);
