/** Error codes of the agents plugin (generated into docs/errors.md); table_not_found and model_not_found are shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  mcp_not_acceptable: { status: 406, meaning: 'POST /mcp without an Accept header naming both application/json and text/event-stream (MCP streamable HTTP requires both).' },
  mcp_invalid_message: { status: 400, meaning: 'POST /mcp with a body that is not a JSON-RPC 2.0 message or batch.' },
  mcp_read_only: { status: 403, meaning: 'The MCP server runs with --read-only and the `query` tool was sent a masking command, which changes policies.' },
});
