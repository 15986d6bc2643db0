/** The streams section of `dp context` (agents.context): each stream's steps and schedule, never its webhook address. */
import { markdownCode, type ContextSection, type StreamsService } from '../../sdk/index.js';

export function streamsContextSection(streams: StreamsService): ContextSection {
  return {
    title: 'Streams',
    order: 10,
    write: async () => ({
      lines: streams.list().map((s) => {
        const steps = s.steps.map((st) => `${st.action} ${st.targets.join(', ')}`).join(' → ');
        return `- ${markdownCode(s.name)}${s.schedule ? ` (cron ${markdownCode(s.schedule)})` : ''}: ${steps}${s.description ? `. ${s.description}` : ''}`;
      }),
    }),
  };
}
