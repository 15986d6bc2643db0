import type { DatabasePort } from '../../sdk/db.js';
import type { LoadedProject } from '../config.js';
import type { KernelLogger } from '../log.js';
import type { EnvSecretsStore } from '../secrets.js';

/**
 * What auth needs of the app it serves. The App is one; auth names this instead of the App, so
 * the kernel's boot (which creates auth) and auth do not import each other.
 */
export interface AuthHost {
  readonly project: Pick<LoadedProject, 'root' | 'config' | 'envVars'>;
  readonly db: DatabasePort;
  readonly authEnabled: boolean;
  readonly log: KernelLogger;
  readonly secrets: EnvSecretsStore;
}
