/**
 * Column types of remote SQL engines (information_schema names of PostgreSQL, Redshift,
 * Snowflake, BigQuery, Databricks, DuckDB) as the DuckDB type a synced table gets.
 */

export function sqlTypeToDuckDB(dataType: string, precision?: number | null, scale?: number | null): string {
  const t = dataType.trim().toUpperCase();
  const args = /\((\d+)\s*(?:,\s*(\d+))?\)/.exec(t);
  const base = t.replace(/\(.*\)/, '').trim();
  const p = precision ?? (args ? Number(args[1]) : undefined);
  const s = scale ?? (args?.[2] !== undefined ? Number(args[2]) : undefined);
  if (base.endsWith('[]') || base === 'ARRAY' || base.startsWith('ARRAY<') || base.startsWith('STRUCT') || base.startsWith('MAP') || base === 'RECORD') return 'JSON';
  switch (base) {
    case 'SMALLINT':
    case 'INT2':
    case 'TINYINT':
    case 'BYTEINT':
      return 'SMALLINT';
    case 'INTEGER':
    case 'INT':
    case 'INT4':
    case 'SERIAL':
      return 'INTEGER';
    case 'BIGINT':
    case 'INT8':
    case 'INT64':
    case 'BIGSERIAL':
    case 'LONG':
      return 'BIGINT';
    case 'HUGEINT':
      return 'HUGEINT';
    case 'REAL':
    case 'FLOAT4':
      return 'FLOAT';
    case 'FLOAT':
    case 'FLOAT8':
    case 'FLOAT64':
    case 'DOUBLE':
    case 'DOUBLE PRECISION':
      return 'DOUBLE';
    case 'NUMERIC':
    case 'DECIMAL':
    case 'NUMBER':
    case 'BIGNUMERIC':
    case 'BIGDECIMAL': {
      if (p === undefined || p === null || p > 38) return base === 'NUMBER' && p === undefined ? 'DECIMAL(38,0)' : 'DOUBLE';
      if ((s ?? 0) === 0 && p <= 18) return 'BIGINT';
      return `DECIMAL(${p},${s ?? 0})`;
    }
    case 'BOOLEAN':
    case 'BOOL':
      return 'BOOLEAN';
    case 'DATE':
      return 'DATE';
    case 'TIMESTAMP':
    case 'TIMESTAMP WITHOUT TIME ZONE':
    case 'TIMESTAMP_NTZ':
    case 'DATETIME':
      return 'TIMESTAMP';
    case 'TIMESTAMP WITH TIME ZONE':
    case 'TIMESTAMPTZ':
    case 'TIMESTAMP_TZ':
    case 'TIMESTAMP_LTZ':
      return 'TIMESTAMPTZ';
    case 'JSON':
    case 'JSONB':
    case 'VARIANT':
    case 'OBJECT':
    case 'SUPER':
      return 'JSON';
    default:
      // Text, UUID, time, interval, binary and anything unknown arrive as text.
      return 'VARCHAR';
  }
}

/** A high watermark as a SQL literal (numbers bare, everything else a quoted string). */
export function sqlLiteral(value: unknown): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  const text = value instanceof Date ? value.toISOString() : String(value);
  return `'${text.replace(/'/g, "''")}'`;
}

/** `"name"` with inner quotes doubled (ANSI identifiers: PostgreSQL, Snowflake, DuckDB). */
export function ansiIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
