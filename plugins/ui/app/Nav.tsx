/** The navigation: one link per page the caller may see, in the manifests' order. */
import { NavLink } from 'react-router-dom';
import { Icon } from '@dp/ui';
import type { UiPage } from './PageHost';

export function Nav({ pages }: { pages: UiPage[] }) {
  return (
    <nav className="dp-nav" aria-label="Pages">
      {pages.map((p) => (
        <NavLink key={p.path} to={p.path} className={({ isActive }) => (isActive ? 'dp-nav-link dp-nav-active' : 'dp-nav-link')} title={p.title} data-plugin={p.plugin}>
          <Icon name={p.icon} fallback={p.title} />
          <span>{p.title}</span>
        </NavLink>
      ))}
    </nav>
  );
}
