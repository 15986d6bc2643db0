/** The ci plugin: `dp ci generate` (see generate.ts). */
import { definePlugin } from '../../sdk/index.js';
import { CI_CONFIG } from './config.js';
import { generate } from './generate.js';

export default definePlugin({
  config: [CI_CONFIG],
  setup(ctx) {
    ctx.command('ci generate', (args, io) => {
      const made = generate(ctx, {
        out: args.out ? String(args.out) : null,
        script: args.script ? String(args.script) : null,
        base: args.base ? String(args.base) : null,
        install: args.install ? String(args.install) : null,
        force: Boolean(args.force),
      });
      if (io.wantsJson) io.json(made);
      else {
        io.out(`wrote ${made.workflow} (GitHub Actions) and ${made.script} (any CI; run it locally too)`);
        io.out(`diffs against ${made.base_branch}; the project is at ${made.project_dir} in the repository`);
        if (made.project_dir !== '.') io.out(`GitHub reads workflows only from the repository's top .github/workflows: move ${made.workflow} there`);
      }
      return 0;
    });
  },
});
