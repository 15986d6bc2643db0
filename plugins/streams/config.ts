/**
 * The streams plugin's part of project.yml: `streams` (SPEC "Stream (pipeline) configuration").
 * One TypeBox source gives the schema the kernel validates at boot (line-numbered errors: an
 * unknown step action is "unknown property 'load'" on its line) and the type ctx.config() returns.
 */
import { defineConfig, Type, type StreamDefinition, type StreamInput, type StreamStep } from '../../sdk/index.js';

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

/** A stream as project.yml writes it: steps as `{action: targets}`, defaults left implicit. */
export function writtenStream(stream: StreamInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (stream.description) out.description = stream.description;
  if (stream.schedule) out.schedule = stream.schedule;
  if (stream.retries) out.retries = stream.retries;
  if (stream.retry_delay !== undefined && stream.retry_delay !== 5) out.retry_delay = stream.retry_delay;
  if (stream.webhook_url) out.webhook_url = stream.webhook_url;
  out.steps = stream.steps.map((step) => ({ [step.action]: step.targets }));
  return out;
}
