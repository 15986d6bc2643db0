/** The quality plugin's section of the generated documentation (`catalog.docs`): the contracts of `contracts/*.yml`, as the reader may see them. */
import { markdownCode as code, markdownCodes as codes, type ContractDefinition, type DocSection, type QualityService } from '../../sdk/index.js';

export function contractsDocSection(quality: QualityService): DocSection<ContractDefinition> {
  return {
    key: 'contracts',
    title: 'Contracts',
    order: 20,
    async collect(reader) {
      const contracts = quality.contracts().contracts;
      const byModel = new Map<string, string[]>();
      for (const c of contracts) byModel.set(c.model.toLowerCase(), [...(byModel.get(c.model.toLowerCase()) ?? []), c.name]);
      return { entries: contracts.filter((c) => !reader.hidden(c.model)), byModel };
    },
    markdown({ entries }) {
      return entries.flatMap((k) => [
        `### ${k.name}`,
        '',
        ...(k.description ? [k.description, ''] : []),
        `- Model: ${code(k.model)}`,
        `- Severity: ${k.severity}`,
        `- Assertions: ${codes(k.assertions)}`,
        `- Defined in: ${code(k.file)}`,
        '',
      ]);
    },
  };
}
