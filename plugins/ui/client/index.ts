/**
 * @dp/ui: the shared client library of the web UI. Built-in pages import it through a Vite
 * alias, third-party pages by bare name through the shell's import map (docs/ui.md): one copy.
 * Heavy parts are separate bare names: `@dp/ui/editor` (CodeMirror), `@dp/ui/graph` (@xyflow/react).
 */
export { api, ApiError, apiHeaders, download, errorFromResponse, onUnauthorized, request, seg, setToken, withQuery, type RequestOptions } from './api';
export { IfCan, ROLE_PERMISSIONS, roleCan, SessionContext, SessionProvider, useCan, useSession, type Permission, type Role, type Session, type SessionUser } from './session';
export { useApi, useHotkey, usePersistentState, type Loaded } from './hooks';
export { Badge, DetailView, Dialog, Empty, ErrorBox, Field, FormDialog, formatValue, Icon, ICON_NAMES, isNumericType, Loading, PageHeader, StatusBadge, Table, Tabs, type Column } from './components';
export { ResultsGrid, toCsv, type ResultsGridProps } from './grid';
export type { PageProps } from './page';
export { loadMaskingPolicies, useMaskingPolicies, type MaskingPolicyView } from './masking';
export { columnMaskMark, maskedAtOf, maskedResultTitle, useLineageMasks, type ColumnMaskMark, type MaskedResultColumn } from './masked-columns';
