/** Error codes of the agents plugin (generated into docs/errors.md); table_not_found and model_not_found are shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  mcp_read_only: { status: 403, meaning: 'The MCP server runs with --read-only and the `query` tool was sent a masking command, which changes policies.' },
});
