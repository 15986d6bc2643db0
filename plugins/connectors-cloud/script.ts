/**
 * The text of `ingest/connector_<name>.ts` for every type of this plugin: the sdk's standard
 * script (`connectorScript`), which asks the connectors plugin to sync the connection as
 * project.yml declares it, so the script holds no parameter and no secret and never goes stale.
 */
import { connectorScript } from '../../sdk/index.js';

export function generateSyncScript(connection: { name: string; type: string }, tables: string[], targetSchema: string): string {
  return connectorScript(connection, tables, targetSchema);
}
