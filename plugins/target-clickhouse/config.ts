/**
 * The active environment's `target:` (project.yml, `${VAR}` already expanded from .env by the
 * kernel). One small function, so it moves to the live config service in one place.
 */
import { badRequest, type PluginContext, type TargetConfig } from '../../sdk/index.js';

export function activeTargetConfig(ctx: PluginContext): TargetConfig | null {
  const env = ctx.project.env;
  if (!env) return null;
  const target = ctx.project.config.environments[env]?.target;
  if (!target || target.type === 'duckdb') return null;
  if (target.type !== 'clickhouse') throw badRequest('invalid_target', `environments.${env}.target.type must be 'duckdb' or 'clickhouse'`);
  return target;
}
