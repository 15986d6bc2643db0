/**
 * The shapes the semantic plugin's HTTP API answers with, for the Metrics page (`import type`;
 * types only, so the page's bundle takes nothing from the server side). They come from the
 * semantic contract in sdk/semantic.ts that the plugin implements, so there is one definition.
 */
import type { SemanticService } from '../../sdk/semantic.js';

export type { MetricDefinition, MetricLoadError } from '../../sdk/semantic.js';

/** GET /api/semantic/metrics: the valid metrics and what is wrong with the others. */
export type MetricList = Awaited<ReturnType<SemanticService['metrics']>>;

/** POST /api/semantic/query: the compiled SQL, its parameters and the rows. */
export type MetricQueryResult = Awaited<ReturnType<SemanticService['query']>>;
