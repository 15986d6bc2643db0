import { definePlugin } from '../../../../sdk/index.js';
import { COLLABORATION_CONFIG, registerCollaboration } from '../../../../plugins/notebooks/collaboration/index.js';

export default definePlugin({
  config: [COLLABORATION_CONFIG],
  setup(ctx) {
    registerCollaboration(ctx);
  },
});
