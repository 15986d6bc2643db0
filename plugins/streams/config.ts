/**
 * The streams plugin's part of project.yml: `streams` (SPEC "Stream (pipeline) configuration").
 * One TypeBox source gives the schema the kernel validates at boot (line-numbered errors: an
 * unknown step action is "unknown property 'load'" on its line) and the type ctx.config() returns.
 */
import fs from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { ajvFieldError, badRequest, defineConfig, readYaml, Type, type ProjectInfo, type StreamDefinition, type StreamStep } from '../../sdk/index.js';

const Targets = Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: "Targets, or [all]" });

/** One step: exactly one action key with its targets. */
const StepSchema = Type.Object(
  {
    ingest: Type.Optional(Targets),
    seed: Type.Optional(Targets),
    transform: Type.Optional(Targets),
    export: Type.Optional(Targets),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1, description: 'One action (ingest, seed, transform, export) with a target list or [all]' },
);

const StreamSchema = Type.Object(
  {
    description: Type.String({ default: '' }),
    schedule: Type.Union([Type.String(), Type.Null()], { default: null, description: '5-field cron expression' }),
    retries: Type.Integer({ minimum: 0, default: 0, description: 'Retries per failed step' }),
    retry_delay: Type.Number({ minimum: 0, default: 5, description: 'Seconds between retries' }),
    webhook_url: Type.Union([Type.String(), Type.Null()], { default: null, description: 'Completion notification URL' }),
    steps: Type.Array(StepSchema),
  },
  { additionalProperties: false },
);

export const STREAMS_CONFIG = defineConfig('streams', Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.-]+$' }), StreamSchema, { default: {} }));

export const STEP_ACTIONS = ['ingest', 'seed', 'transform', 'export'] as const;

/** The validated `streams:` map as definitions with their steps as `{action, targets}`. */
export function streamDefinitions(raw: Record<string, { description: string; schedule: string | null; retries: number; retry_delay: number; webhook_url: string | null; steps: Array<Record<string, string[] | undefined>> }>): StreamDefinition[] {
  return Object.entries(raw).map(([name, s]) => ({
    name,
    description: s.description,
    schedule: s.schedule,
    retries: s.retries,
    retry_delay: s.retry_delay,
    webhook_url: s.webhook_url,
    steps: s.steps.map((step): StreamStep => {
      const [action, targets] = Object.entries(step).find(([, v]) => v !== undefined)!;
      return { action: action as StreamStep['action'], targets: targets as string[] };
    }),
  }));
}

const PROJECT_FILE = 'project.yml';
let validateStreams: ValidateFunction | undefined;

/** What identifies one version of project.yml on disk (an atomic rewrite is a new inode). */
export function projectFileStamp(project: ProjectInfo): string | null {
  try {
    const st = fs.statSync(project.resolve(PROJECT_FILE));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

/**
 * `streams:` of project.yml as it is on disk now, `${VAR}` expanded through `lookup`, validated
 * against the schema the kernel checks at boot (defaults filled in). DpError 400
 * `invalid_project_yml` naming the field when it does not hold.
 */
export function readStreamDefinitions(project: ProjectInfo, lookup: (name: string) => string | undefined): StreamDefinition[] {
  const text = fs.readFileSync(project.resolve(PROJECT_FILE), 'utf8');
  const doc = readYaml(text, PROJECT_FILE, 'invalid_project_yml').value as Record<string, unknown> | null;
  const expand = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (all, name: string) => lookup(name) ?? all);
    if (Array.isArray(v)) return v.map(expand);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x)]));
    return v;
  };
  const raw = expand(doc && typeof doc === 'object' ? (doc.streams ?? {}) : {});
  validateStreams ??= new Ajv({ useDefaults: true, strict: false }).compile(STREAMS_CONFIG.schema as object);
  if (!validateStreams(raw)) {
    const f = ajvFieldError(validateStreams.errors![0]!);
    throw badRequest('invalid_project_yml', `${PROJECT_FILE}: streams.${f.field}: ${f.message}`, { file: PROJECT_FILE, field: `streams.${f.field}` });
  }
  return streamDefinitions(raw as Parameters<typeof streamDefinitions>[0]);
}
