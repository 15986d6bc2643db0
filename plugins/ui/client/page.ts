/** What the shell passes a page module's default export (docs/ui.md). */
export interface PageProps {
  /** The page's own entry from contributes.ui. */
  page: { plugin: string; path: string; title: string };
}
