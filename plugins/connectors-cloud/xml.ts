/** XML answers of the S3 API, parsed by fast-xml-parser (values kept as text: a key `001` stays `001`). */
import * as fxp from 'fast-xml-parser';

type ParserModule = {
  parse?: (xml: string, options?: Record<string, unknown>) => unknown;
  XMLParser?: new (options?: Record<string, unknown>) => { parse(xml: string): unknown };
};

export function parseXml(xml: string): Record<string, unknown> {
  const mod = fxp as unknown as ParserModule;
  // fast-xml-parser 3 exports parse(); 4 and later a XMLParser class.
  if (mod.XMLParser) return new mod.XMLParser({ parseTagValue: false, ignoreAttributes: true }).parse(xml) as Record<string, unknown>;
  return mod.parse!(xml, { parseNodeValue: false, ignoreAttributes: true }) as Record<string, unknown>;
}
