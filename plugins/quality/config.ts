/**
 * The quality plugin's part of project.yml: `quality` (anomaly detection) and `alerts`
 * (SPEC.md "Project configuration", "Alerts", "Anomaly detection"). One TypeBox source gives the
 * schema the kernel validates at boot and the type ctx.config() returns.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const QUALITY_CONFIG = defineConfig(
  'quality',
  Type.Object(
    {
      anomaly_detection: Type.Object(
        {
          enabled: Type.Boolean({ default: true }),
          lookback: Type.Integer({ minimum: 1, default: 30, description: 'Past runs compared' }),
          threshold: Type.Number({ exclusiveMinimum: 0, default: 2.0, description: 'Z-score above which a metric is an anomaly' }),
          notify: Type.Array(Type.String(), { default: [], description: 'Alert channels notified of anomalies' }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
);

export const ALERTS_CONFIG = defineConfig(
  'alerts',
  Type.Object(
    {
      channels: Type.Array(Type.Union([Type.Literal('chat'), Type.Literal('webhook'), Type.Literal('log')]), { default: [] }),
      chat_webhook_url: Type.Optional(Type.String()),
      webhook_url: Type.Optional(Type.String()),
      on_success: Type.Boolean({ default: false }),
      on_failure: Type.Boolean({ default: true }),
      /** Per HTTP delivery; 10 when absent (no schema default, so it reads as unset). */
      timeout_seconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Seconds per HTTP delivery (default 10)' })),
    },
    { default: {} },
  ),
);
