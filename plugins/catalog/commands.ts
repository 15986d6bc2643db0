/** `dp docs [--out file]`. */
import path from 'node:path';
import { LOCAL_ADMIN, type PluginContext } from '../../sdk/index.js';
import type { CatalogDeps } from './catalog.js';
import { renderMarkdown, structuredDocs } from './docs.js';

export function registerCommands(ctx: PluginContext, deps: CatalogDeps): void {
  ctx.command('docs', async (args, io) => {
    const docs = await structuredDocs(deps, { caller: io.caller ?? LOCAL_ADMIN });
    if (io.wantsJson && !args.out) {
      io.json(docs);
      return 0;
    }
    const markdown = renderMarkdown(docs, ctx.env);
    if (!args.out) {
      process.stdout.write(markdown.endsWith('\n') ? markdown : markdown + '\n');
      return 0;
    }
    // --out is relative to the current folder, and must land inside the project (writeFile refuses the rest).
    const target = ctx.project.relative(path.resolve(process.cwd(), String(args.out)));
    ctx.project.writeFile(target, markdown.endsWith('\n') ? markdown : markdown + '\n');
    io.err(`wrote ${target} (${Object.entries(docs.counts).filter(([key]) => key === 'models' || docs.sections?.some(({ section }) => section.key === key)).map(([key, n]) => `${n} ${key}`).join(', ')})`);
    return 0;
  });
}
