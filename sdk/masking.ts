/**
 * The masking plugin's public contract: its service, its `masking.methods` extension point, its
 * `masking.valuesHiddenFrom` hook point, and the masked columns a query answer reports.
 */
import type { Caller } from './auth.js';
import { createExtensionPoint, createHookRef, createServiceRef } from './refs.js';

/**
 * Which result columns of a query the server masked (`masked_columns` of `POST /api/query`),
 * as the masking rewrite that ran planned them. Which columns are masked is not secret; their
 * values are.
 */
export interface MaskedResultColumn {
  /** Position of the column in `columns` (0-based). */
  index: number;
  /** The result column's name as in `columns`. */
  name: string;
  /** The masking method of the policy behind it (for a column computed from masked input, the method of that input). */
  method: string;
  /** `column`: the masked value itself, passed through or renamed; `expression`: a value computed from masked input. */
  via: 'column' | 'expression';
  /** Id of the policy (`derived:schema.table.column` for one derived from lineage). */
  policy?: string;
  /** `schema.table.column` of the policy's column. */
  source?: string;
  /** Set when the policy was derived from column lineage. */
  derived?: boolean;
}

export interface MaskingService {
  /** Columns of `schema.table` the caller would see masked. */
  maskedColumns(caller: Caller, schema: string, table: string): Promise<string[]>;
  /**
   * Lower-case names of every column some policy masks for the caller, whatever its table: an
   * ad-hoc query masks by column name alone (docs/decisions.md "Masking policy" rule 4), so a data file holding a
   * column of one of these names is a raw copy the caller may not read.
   */
  maskedColumnNames(caller: Caller): Promise<string[]>;
}

/** What a masking method knows about the column it masks. */
export interface MaskingColumnInfo {
  /** DuckDB type name of the column when known (`VARCHAR`, `DATE`, `DECIMAL(10,2)`). */
  type?: string;
}

/**
 * A masking method, built in or contributed through the masking plugin's `masking.methods`
 * extension point. `expression` compiles to DuckDB SQL so masking runs inside the query.
 */
export interface MaskingMethod {
  /** Lower-case identifier used in policies (`hash`, `partial`, ...). */
  name: string;
  description: string;
  /** JSON schema (an object schema with defaults) of the method's `method_config`. */
  configSchema: Record<string, unknown>;
  /**
   * A SQL expression masking `column` (an already-quoted SQL expression). `config` has the
   * schema's defaults filled in. NULL in gives NULL out; the raw value must never come out.
   */
  expression(column: string, config: Record<string, any>, info: MaskingColumnInfo): string;
  /** The same masking on one value in JavaScript, for the post-execution fallback; without it the fallback yields NULL. */
  apply?(value: unknown, config: Record<string, any>, info: MaskingColumnInfo): unknown;
}

export const MASKING_SERVICE = createServiceRef<MaskingService>('masking');

/** Masking methods from other plugins (a method or a list of them). */
export const MASKING_METHODS = createExtensionPoint<MaskingMethod | MaskingMethod[]>('masking.methods');

/**
 * Whether raw data values are hidden from a caller (true when a masking policy binds them): a
 * plugin that shows error texts lists `masking.valuesHiddenFrom` under `contributes.fires` and
 * asks through the sdk's `errorTextsFor`, which drops quoted values from the texts such a caller
 * sees. The masking plugin answers it; when masking is disabled nobody does and texts stay whole.
 */
export const VALUES_HIDDEN_FROM = createHookRef<[Caller], boolean>('masking.valuesHiddenFrom');
