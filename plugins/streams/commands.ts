/** CLI commands of the streams plugin: `dp jobs run <name>`, `dp jobs list` (declared in plugin.json). */
import { errorTextsFor, LOCAL_ADMIN, VALUES_HIDDEN_FROM, withEnvReferences, type PluginContext } from '../../sdk/index.js';
import type { StreamRunner } from './streams.js';

export function registerCommands(ctx: PluginContext, parts: { streams: StreamRunner }): void {
  const { streams } = parts;
  // Relayed through POST /api/cli/run, a command answers its caller as the routes do: error
  // texts through the sdk's one redaction, webhook URLs with their secrets as ${VAR} references.
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);

  ctx.command('jobs run', async (args, io) => {
    const name = String(args.name);
    const def = streams.get(name);
    const errorTexts = await errorTextsFor(valuesHidden, io.caller ?? LOCAL_ADMIN);
    const line = (text: string) => (io.wantsJson ? io.err(errorTexts.text(text)) : io.out(errorTexts.text(text)));
    const result = await streams.run(name, {
      trigger: 'cli',
      onEvent: (kind, p) => {
        const step = typeof p.step === 'number' ? def.steps[p.step] : undefined;
        if (kind === 'start') line(`stream ${name}: ${def.steps.length} step${def.steps.length === 1 ? '' : 's'}`);
        else if (kind === 'step_start') line(`[${(p.step as number) + 1}/${def.steps.length}] ${p.action} [${(p.targets as string[]).join(', ')}]${(p.attempt as number) > 1 ? ` (attempt ${p.attempt})` : ''}`);
        else if (kind === 'step_end') line(`[${(p.step as number) + 1}/${def.steps.length}] ${step?.action ?? p.action} ${p.status} in ${p.duration_ms} ms${p.error ? `: ${p.error}` : ''}`);
        else if (kind === 'model_start') line(`    ${p.model} ...`);
        else if (kind === 'model_end') line(`    ${p.model} ${p.status} (${p.duration_ms} ms)${p.error ? `: ${p.error}` : ''}`);
        else if (kind === 'output') line(`    ${p.script ? `${p.script}: ` : ''}${p.line}`);
      },
    });
    if (io.wantsJson) io.json(errorTexts.fields(result));
    else line(`stream ${name} ${result.status} in ${result.duration_ms} ms${result.error ? `: ${result.error}` : ''}`);
    return result.status === 'success' ? 0 : 1;
  });

  ctx.command('jobs list', async (_args, io) => {
    const rows = streams.list().map((d) => ({
      stream: d.name,
      schedule: d.schedule ?? '',
      steps: d.steps.map((s) => `${s.action}[${s.targets.join(',')}]`).join(' -> '),
      description: d.description,
    }));
    if (io.wantsJson) io.json(streams.list().map((d) => ({ ...d, webhook_url: d.webhook_url === null ? null : withEnvReferences(d.webhook_url, ctx.env) })));
    else if (rows.length === 0) io.out('No streams in project.yml');
    else io.table(rows, ['stream', 'schedule', 'steps', 'description']);
  });
}
