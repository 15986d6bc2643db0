/**
 * Types of dist/kernel/config-validators.generated.js, which scripts/build.mjs writes after tsc
 * with ajv's standalone code generation: the built-in plugins' project.yml schemas (their
 * definePlugin({ config })) compiled once at build time, by configSchemaId(schema)
 * (kernel/plugin-config.ts). A command whose project sets a plugin's key no longer loads ajv and
 * compiles the schema at start; a schema not found here (a third-party plugin) compiles as before.
 */
import type { ValidateFunction } from 'ajv';

export const configValidators: Record<string, ValidateFunction>;
