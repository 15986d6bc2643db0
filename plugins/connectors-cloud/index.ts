/**
 * connectors-cloud: the remote connector types (spreadsheet, object storage, REST and SaaS APIs,
 * cloud warehouses), contributed to the connectors plugin's CONNECTOR_TYPES extension point.
 * Setup, sync, CDC state and the routes are the connectors plugin's; this plugin only reads sources.
 */
import { CONNECTOR_TYPES, definePlugin } from '../../sdk/index.js';
import { CLOUD_CONNECTOR_TYPES } from './types.js';

export default definePlugin({
  setup(ctx) {
    for (const type of CLOUD_CONNECTOR_TYPES) ctx.extend(CONNECTOR_TYPES, type);
  },
});
