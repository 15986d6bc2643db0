/** The ci plugin's part of project.yml (`ci:`): what `dp ci generate` writes into the files. */
import { defineConfig, Type } from '../../sdk/index.js';

export const CI_CONFIG = defineConfig(
  'ci',
  Type.Object(
    {
      /** The branch whose build the diff compares with. */
      base_branch: Type.String({ default: 'main', pattern: '^[A-Za-z0-9._/-]+$' }),
      /**
       * What `npm install -g` installs when no `dp` is on the PATH: a git URL or tarball of dp (dp
       * is not published under a registry name, and `dp` on npm is another package). Unset: the
       * workflow reads the repository variable DP_PACKAGE.
       */
      install: Type.Optional(Type.String({ minLength: 1 })),
      /** Node.js major version for the GitHub Actions runner. */
      node_version: Type.String({ default: '20', pattern: '^[0-9]+(\\.[0-9]+)*$' }),
    },
    { default: {}, additionalProperties: false },
  ),
);
