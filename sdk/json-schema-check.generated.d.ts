/**
 * Types of dist/sdk/json-schema-check.generated.js, which scripts/build.mjs writes after tsc with
 * ajv's standalone code generation: JSON Schema's draft-07 meta-schema compiled at build time,
 * not at the first check in a process (compiling it cost about 55 ms of CPU at every server start:
 * the connector types' params schemas are checked when they register).
 */
import type { ValidateFunction } from 'ajv';

export const validateJsonSchema: ValidateFunction;
