/**
 * History API routing under the app's base (`/app/`): the service answers `index.html` for any
 * `/app/...` path, so deep links such as `/app/pipelines/orders` load the app, which then picks
 * the page from the path.
 */

export type Route =
  | { page: 'pipelines' }
  | { page: 'pipeline-new' }
  | { page: 'pipeline'; name: string }
  | { page: 'pipeline-edit'; name: string }
  | { page: 'connections' }
  | { page: 'workers' }
  | { page: 'machine'; name: string | null }
  | { page: 'access' }
  | { page: 'not-found'; path: string };

/** `/app/` (Vite's `base`), always with a trailing slash. */
export const BASE = import.meta.env.BASE_URL.endsWith('/')
  ? import.meta.env.BASE_URL
  : `${import.meta.env.BASE_URL}/`;

/** The address of an app path such as `pipelines/orders`. */
export function href(path: string): string {
  return BASE + path.replace(/^\/+/, '');
}

export function pipelineHref(name: string): string {
  return href(`pipelines/${encodeURIComponent(name)}`);
}

export function pipelineEditHref(name: string): string {
  return href(`pipelines/${encodeURIComponent(name)}/edit`);
}

/** The state machine page, with a pipeline highlighted when named. */
export function machineHref(name: string | null = null): string {
  return href(name ? `machine/${encodeURIComponent(name)}` : 'machine');
}

/** The route of a location's pathname. */
export function matchRoute(pathname: string): Route {
  const inApp = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname.replace(/^\/+/, '');
  const parts = inApp.split('/').filter(Boolean).map(decodePart);
  const [first, second, ...rest] = parts;
  if (first === 'pipelines' && second !== undefined && rest.length === 1 && rest[0] === 'edit') {
    return { page: 'pipeline-edit', name: second };
  }
  if (rest.length === 0) {
    if (first === undefined) return { page: 'pipelines' };
    if (first === 'pipelines' && second === undefined) return { page: 'pipelines' };
    if (first === 'pipelines' && second === 'new') return { page: 'pipeline-new' };
    if (first === 'pipelines' && second !== undefined) return { page: 'pipeline', name: second };
    if (second === undefined && first === 'connections') return { page: 'connections' };
    if (second === undefined && first === 'workers') return { page: 'workers' };
    if (second === undefined && first === 'access') return { page: 'access' };
    if (first === 'machine') return { page: 'machine', name: second ?? null };
  }
  return { page: 'not-found', path: pathname };
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export const router = $state<{ route: Route; pathname: string; keepFocus: boolean }>({
  route: matchRoute(window.location.pathname),
  pathname: window.location.pathname,
  keepFocus: false,
});

/**
 * Goes to an app address (from `href`), adding a history entry unless `replace`. The focus moves
 * to the new page unless `keepFocus` (a change made by a control that stays on the page).
 */
export function navigate(to: string, options: { replace?: boolean; keepFocus?: boolean } = {}): void {
  const url = new URL(to, window.location.href);
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  router.keepFocus = options.keepFocus ?? false;
  update();
  if (!options.keepFocus) window.scrollTo(0, 0);
}

function update() {
  router.pathname = window.location.pathname;
  router.route = matchRoute(window.location.pathname);
}

/** Listens to back/forward and takes over clicks on links inside the app. */
export function startRouter(): () => void {
  const onPopState = () => {
    router.keepFocus = false;
    update();
  };
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element | null)?.closest?.('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
    const url = new URL(anchor.href, window.location.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return;
    const samePage = url.pathname === window.location.pathname && url.search === window.location.search;
    if (samePage && url.hash) return; // an in-page link, e.g. "Skip to content"
    event.preventDefault();
    if (!samePage) navigate(url.href);
  };
  window.addEventListener('popstate', onPopState);
  document.addEventListener('click', onClick);
  return () => {
    window.removeEventListener('popstate', onPopState);
    document.removeEventListener('click', onClick);
  };
}
