/**
 * Web UI pages a plugin contributes (`contributes.ui` in plugin.json; docs/ui.md). The `ui`
 * plugin serves the shell at `/` and shows the pages of enabled plugins the caller may see.
 */
import type { Permission } from './auth.js';

export interface ManifestUiPage {
  /** Client-side route of the page; it also owns the routes below it (`/models/...`). */
  path: string;
  /** Navigation label. */
  title: string;
  /** An icon name of the shell's set (docs/ui.md); unknown names show the title's first letter. */
  icon?: string;
  /** What a caller needs to see the page; the API checks every call regardless. */
  permission: Permission;
  /**
   * The page module, relative to the plugin folder: a `.tsx`/`.ts` source built with the shell
   * (plugins in the repository), or a prebuilt ES module `.js`/`.mjs` (third-party plugins).
   */
  entry: string;
  /** Position in the navigation, lower first (default 100). */
  order?: number;
}

export interface ManifestUi {
  pages?: ManifestUiPage[];
}
