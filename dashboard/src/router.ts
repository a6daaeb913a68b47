import { useEffect, useState } from 'preact/hooks';

/** Every dashboard path lives below this prefix; the server answers index.html for all of them. */
export const BASE = '/dashboard';

const listeners = new Set<() => void>();

/** The current path without the /dashboard prefix ("/" for the agents list). */
export function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return path === '' ? '/' : path;
}

/** Goes to a dashboard path (`/agents/…`) without a reload. */
export function navigate(path: string, opts: { replace?: boolean } = {}): void {
  const url = BASE + path;
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const listener of listeners) listener();
  window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => {
  for (const listener of listeners) listener();
});

/** Re-renders the caller whenever the path changes. */
export function usePath(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return path;
}

/** Matches `/agents/:id/tasks/:taskId` style patterns; returns the named segments or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = decodeURIComponent(got[i] as string);
    if (w.startsWith(':')) params[w.slice(1)] = g;
    else if (w !== g) return null;
  }
  return params;
}
