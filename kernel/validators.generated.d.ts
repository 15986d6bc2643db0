/**
 * Types of dist/kernel/validators.generated.js, which scripts/build.mjs writes after tsc with
 * ajv's standalone code generation: the validators are compiled once at build time, not on
 * every CLI start (compiling them cost about 80 ms of `dp --help`).
 * Sources: kernel/project-schema.ts and plugin-manifest.schema.json.
 */
import type { ValidateFunction } from 'ajv';

export const validateProject: ValidateFunction;
export const validateManifest: ValidateFunction;
