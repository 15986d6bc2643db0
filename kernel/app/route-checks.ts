/** Every registered route must be declared in its plugin's manifest with the same permission and kind, and vice versa. */
import { DpError } from '../../sdk/errors.js';
import type { DiscoveredPlugin } from '../plugins.js';

/** A route as registered: enough to hold it against its plugin's manifest. */
export interface RegisteredRouteShape {
  plugin: string;
  method: string;
  url: string;
  permission?: string;
  kind?: string;
}

export function checkManifestRoutes(plugins: DiscoveredPlugin[], loaded: DiscoveredPlugin[], registeredRoutes: RegisteredRouteShape[]): void {
  const key = (m: string, u: string) => `${m} ${u}`;
  for (const p of plugins) {
    if (!loaded.includes(p)) {
      // Not loaded (activation on demand): its manifest alone is checked, as for every plugin.
      for (const r of p.manifest.contributes?.routes ?? []) {
        if (!r.permission) throw new DpError(500, 'route_without_permission', `Route ${r.method} ${r.url} of plugin '${p.manifest.name}' declares no permission`);
      }
      continue;
    }
    const declared = new Map((p.manifest.contributes?.routes ?? []).map((r) => [key(r.method, r.url), r]));
    const registered = registeredRoutes.filter((r) => r.plugin === p.manifest.name);
    for (const r of registered) {
      if (!r.permission) throw new DpError(500, 'route_without_permission', `Route ${r.method} ${r.url} of plugin '${p.manifest.name}' declares no permission`);
      const d = declared.get(key(r.method, r.url));
      if (!d) throw new DpError(500, 'undeclared_route', `Plugin '${p.manifest.name}' registers ${r.method} ${r.url}, which its plugin.json does not declare`);
      if (d.permission !== r.permission) {
        throw new DpError(500, 'route_permission_mismatch', `Route ${r.method} ${r.url}: plugin.json says '${d.permission}', the code says '${r.permission}'`);
      }
      if ((d.kind ?? 'json') !== (r.kind ?? 'json')) {
        throw new DpError(500, 'route_kind_mismatch', `Route ${r.method} ${r.url}: plugin.json says kind '${d.kind ?? 'json'}', the code registers '${r.kind ?? 'json'}'`);
      }
      declared.delete(key(r.method, r.url));
    }
    if (declared.size > 0) {
      throw new DpError(500, 'unregistered_route', `Plugin '${p.manifest.name}' declares ${[...declared.keys()].join(', ')} in plugin.json but never registers it`);
    }
  }
}
