/** The contracts section of `dp context` (agents.context): each contract's model, severity, file and assertions. */
import { markdownCode, markdownCodes, type ContextSection, type QualityService } from '../../sdk/index.js';

export function contractsContextSection(service: QualityService): ContextSection {
  return {
    title: 'Contracts',
    order: 1,
    write: async () => {
      const { contracts, errors } = service.contracts();
      return {
        lines: contracts.map((c) => `- ${markdownCode(c.name)} on ${markdownCode(c.model)} (${c.severity}, ${markdownCode(c.file)}): ${c.assertions.length ? markdownCodes(c.assertions) : 'no assertions'}`),
        problems: errors.map((e) => `${e.file}${e.index === undefined ? '' : ` (contract ${e.index + 1})`}: ${e.reason}`),
      };
    },
  };
}
