/** Error codes of the semantic plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  metric_not_found: { status: 404, meaning: 'No metric in metrics/*.yml has that name.' },
  metric_invalid: { status: 400, meaning: 'The metric is defined but did not load; the message gives the file and the reason (GET /api/semantic/metrics lists load errors).' },
  unknown_dimension: { status: 400, meaning: 'A requested dimension is not among the dimensions the metric declares; refused before any SQL is generated.' },
  duplicate_dimension: { status: 400, meaning: 'A dimension is requested twice.' },
  invalid_grain: { status: 400, meaning: 'The grain is not one of hour, day, week, month, quarter, year; refused before any SQL is generated.' },
  no_time_dimension: { status: 400, meaning: 'A grain or a start/end bound was given for a metric without time_dimension.' },
  invalid_time_bound: { status: 400, meaning: 'start or end is not an ISO date or timestamp.' },
  invalid_metric_action: { status: 400, meaning: '`dp metrics sql` and `dp metrics query` need a metric name.' },
});
