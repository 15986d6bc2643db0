/** The semantic layer's section of the generated documentation (the catalog's `catalog.docs` extension point): every metric, and the definitions that did not load. */
import { markdownCode as code, markdownCodes as codes, type DocSection, type MetricDefinition, type MetricLoadError, type SemanticService } from '../../sdk/index.js';

export function metricsDocSection(semantic: SemanticService): DocSection<MetricDefinition> {
  return {
    key: 'metrics',
    title: 'Metrics',
    order: 10,
    async collect() {
      const { metrics, errors } = await semantic.metrics();
      const byModel = new Map<string, string[]>();
      for (const m of metrics) byModel.set(m.model.toLowerCase(), [...(byModel.get(m.model.toLowerCase()) ?? []), m.name]);
      return { entries: metrics, extra: { metric_errors: errors }, byModel };
    },
    markdown({ entries, extra }) {
      const out: string[] = [];
      for (const m of entries) {
        out.push(`### ${m.name}`, '');
        if (m.description) out.push(m.description, '');
        out.push(`- Model: ${code(m.model)}`, `- Measure: ${code(m.measure)}`, `- Dimensions: ${codes(m.dimensions)}`, `- Time dimension: ${m.time_dimension ? code(m.time_dimension) : 'none'}`);
        if (m.filters.length) out.push(`- Filters: ${codes(m.filters)}`);
        out.push(`- Defined in: ${code(m.file)}`, '');
      }
      const errors = (extra?.metric_errors ?? []) as MetricLoadError[];
      if (errors.length) {
        out.push('Metric definitions that did not load:', '');
        for (const e of errors) out.push(`- ${code(e.file)}${e.metric ? ` ${e.metric}` : ''}: ${e.reason}`);
        out.push('');
      }
      return out;
    },
  };
}
