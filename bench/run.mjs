// Runs every compiled benchmark (dist/bench/*.bench.js) and prints one table.
// Each module default-exports async () => Array<{ name, value, unit, target?, ok? }>.
// Usage: npm run bench [-- substring ...]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

process.env.DP_LOG_SILENT ??= '1';
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'dist', 'bench');
const filters = process.argv.slice(2);
const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.bench.js')).sort() : [];
const selected = filters.length ? files.filter((f) => filters.some((s) => f.includes(s))) : files;
const rows = [];
let failed = 0;
for (const file of selected) {
  process.stderr.write(`running ${file} ...\n`);
  const mod = await import(pathToFileURL(path.join(dir, file)).href);
  try {
    for (const r of await mod.default()) {
      rows.push({ bench: file.replace('.bench.js', ''), ...r });
      if (r.ok === false) failed++;
    }
  } catch (e) {
    failed++;
    rows.push({ bench: file.replace('.bench.js', ''), name: 'error', value: String(e?.message ?? e), unit: '' });
  }
}
const fmt = (v) => (typeof v === 'number' ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)) : String(v));
const lines = ['| bench | measure | value | unit | target | ok |', '|---|---|---|---|---|---|'];
for (const r of rows) lines.push(`| ${r.bench} | ${r.name} | ${fmt(r.value)} | ${r.unit ?? ''} | ${r.target ?? ''} | ${r.ok === undefined ? '' : r.ok ? 'yes' : 'NO'} |`);
process.stdout.write(lines.join('\n') + '\n');
process.stdout.write(`\nmachine: ${process.platform} ${process.arch}, node ${process.version}, ${(await import('node:os')).cpus().length} cores\n`);
process.exit(failed ? 1 : 0);
