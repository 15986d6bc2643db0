/**
 * A server with the kernel alone (no built-in plugins), for auth tests that exercise only
 * kernel routes: they then do not depend on the state of every feature plugin. The
 * route-matrix test uses the full startServer on purpose.
 */
import fs from 'node:fs';
import { startServer, tempDir, type TestServer } from '../helpers.js';

export async function startKernelServer(projectRoot: string, options: { auth?: boolean } = {}): Promise<TestServer> {
  const noPlugins = tempDir('dp-no-plugins-');
  const server = await startServer(projectRoot, { auth: options.auth, builtInPluginsDir: noPlugins });
  return {
    ...server,
    async close() {
      await server.close();
      fs.rmSync(noPlugins, { recursive: true, force: true });
    },
  };
}
