/** Loads a page's module (a lazy chunk of the shell, or a third-party ES module) and shows it. */
import { Component, lazy, Suspense, type ComponentType, type ErrorInfo, type ReactNode } from 'react';
import { ErrorBox, Loading, type PageProps, type Permission } from '@dp/ui';
import { builtPages } from 'virtual:dp-pages';

export interface UiPage {
  plugin: string;
  path: string;
  title: string;
  icon: string | null;
  order: number;
  permission: Permission;
  module: { kind: 'built'; key: string; available: boolean } | { kind: 'module'; url: string };
}

type PageModule = { default: ComponentType<PageProps> };

const lazyPages = new Map<string, ComponentType<PageProps>>();

function loader(page: UiPage): () => Promise<PageModule> {
  const m = page.module;
  if (m.kind === 'module') return () => import(/* @vite-ignore */ m.url) as Promise<PageModule>;
  const built = builtPages[m.key];
  if (!built) return () => Promise.reject(new Error(`The page ${page.path} of plugin '${page.plugin}' is not in this build of the UI: run npm run build and restart dp serve`));
  return built;
}

function pageComponent(page: UiPage): ComponentType<PageProps> {
  const key = page.module.kind === 'built' ? page.module.key : page.module.url;
  let c = lazyPages.get(key);
  if (!c) {
    const load = loader(page);
    c = lazy(async () => {
      const mod = await load();
      if (typeof mod.default !== 'function') throw new Error(`The page module of plugin '${page.plugin}' has no default export (a React component)`);
      return mod;
    });
    lazyPages.set(key, c);
  }
  return c;
}

export function PageHost({ page }: { page: UiPage }) {
  const Page = pageComponent(page);
  return (
    <PageErrorBoundary plugin={page.plugin}>
      <Suspense fallback={<Loading label={`Loading ${page.title}…`} />}>
        <div className="dp-page" data-page={page.path}>
          <Page page={{ plugin: page.plugin, path: page.path, title: page.title }} />
        </div>
      </Suspense>
    </PageErrorBoundary>
  );
}

/** A page that throws shows its error, not a blank screen; the rest of the shell keeps working. */
class PageErrorBoundary extends Component<{ plugin: string; children: ReactNode }, { error: Error | null }> {
  override state = { error: null as Error | null };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  override componentDidCatch(error: Error, info: ErrorInfo) {
    console.error(`page of plugin '${this.props.plugin}' failed`, error, info.componentStack);
  }
  override render() {
    if (this.state.error) {
      return (
        <div className="dp-page">
          <ErrorBox error={this.state.error} onRetry={() => this.setState({ error: null })} />
        </div>
      );
    }
    return this.props.children;
  }
}
