/**
 * CodeMirror's styles without inline <style> elements, so the Content-Security-Policy's
 * style-src needs no 'unsafe-inline'. CodeMirror mounts its themes through style-mod, which writes
 * a <style> element into a document but a constructed stylesheet (`adoptedStyleSheets`, not an
 * inline style for the CSP) into a root that has no `<head>`. Every mount on the document is
 * handed to style-mod as such a root, standing for the document's adopted sheets. Imported by the
 * shell before any editor exists.
 *
 * Adopted sheets come after the page's own stylesheets, so a page rule that should beat
 * CodeMirror's theme belongs in an EditorView.theme (as editorTheme in editor.tsx) rather than
 * in a .css file of equal specificity.
 */
import { StyleModule } from 'style-mod';

const documentSheets = {
  ownerDocument: document,
  get adoptedStyleSheets(): CSSStyleSheet[] {
    return document.adoptedStyleSheets;
  },
  set adoptedStyleSheets(sheets: CSSStyleSheet[]) {
    document.adoptedStyleSheets = sheets;
  },
};

const mount = StyleModule.mount.bind(StyleModule);
StyleModule.mount = (root, modules, options) => mount(root === document ? (documentSheets as unknown as ShadowRoot) : root, modules, options);
