/** The metrics section of `dp context` (agents.context): each metric's description, measure, model and dimensions. */
import { markdownCode, type ContextSection, type SemanticService } from '../../sdk/index.js';

export function metricsContextSection(service: SemanticService): ContextSection {
  return {
    title: 'Metrics',
    order: 2,
    write: async () => {
      const { metrics, errors } = await service.metrics();
      return {
        lines: metrics.map(
          (m) => `- ${markdownCode(m.name)}: ${m.description || 'no description'}; ${markdownCode(m.measure)} over ${markdownCode(m.model)}${m.dimensions.length ? `, by ${m.dimensions.join(', ')}` : ''}`,
        ),
        problems: errors.map((e) => `${e.file}${e.line ? ` line ${e.line}` : ''}: ${e.reason}`),
      };
    },
  };
}
