import { modelAllowed } from '../../accounts/key-models-fns.js';
import type { OpenedCredential, ProvidersService } from '../../providers/providers-service.js';
import { proxyError } from './proxy-fns.js';
import { callUpstream, type ProxyAnswer, relayWhole, type UpstreamDeps } from './proxy-upstream.js';

/** How long one credential's model list may take when listing all of them. */
const MODEL_LIST_TIMEOUT_MS = 15_000;
/** How long listing all of them may take: credentials not asked by then are left out. */
const MODEL_LISTS_DEADLINE_MS = 30_000;
/** Credentials asked at once when listing all of them. */
const MODEL_LIST_CONCURRENCY = 4;
/** Largest model list read from one upstream (real lists are tens of kilobytes). */
export const MODEL_LIST_MAX_BYTES = 1024 * 1024;

/** A route as the models list shows it. */
export interface ListedRoute {
  name: string;
  createdAt: string;
}

/**
 * `GET /spotlight/v1/models`: with a credential named, its upstream list relayed as it is;
 * otherwise the union over the workspace's credentials with ids prefixed (leaving out those whose
 * upstream fails), then each route as `route:<name>`.
 */
export function createModelLists(deps: {
  providers: Pick<ProvidersService, 'resolve' | 'openAll'>;
  upstream: UpstreamDeps;
  routes: (workspaceUuid: string) => Promise<ListedRoute[]>;
  log: (err: unknown, msg: string) => void;
}) {
  /** One credential's model list, entries renamed `<credential name>/<id>`; null when it fails. */
  async function prefixedModels(credential: OpenedCredential, caller: AbortSignal): Promise<unknown[] | null> {
    // One slow upstream must not hold the whole list for the full proxy timeout.
    const signal = AbortSignal.any([
      caller,
      AbortSignal.timeout(Math.min(deps.upstream.timeoutMs, MODEL_LIST_TIMEOUT_MS)),
    ]);
    try {
      const res = await callUpstream(deps.upstream, credential, '/models', { method: 'GET', signal });
      const { answer, text } = await relayWhole(deps.upstream, res, signal, MODEL_LIST_MAX_BYTES);
      if (answer.status < 200 || answer.status >= 300) return null;
      const data = (JSON.parse(text) as { data?: unknown }).data;
      if (!Array.isArray(data)) return null;
      return data
        .filter((m): m is Record<string, unknown> => typeof m === 'object' && m !== null && typeof m.id === 'string')
        .map((m) => ({ ...m, id: `${credential.name}/${m.id}` }));
    } catch (err) {
      if (!caller.aborted) deps.log(err, `model list of credential ${credential.uuid} left out`);
      return null;
    }
  }

  /**
   * Every credential's prefixed models, asking at most MODEL_LIST_CONCURRENCY upstreams at once
   * and none after MODEL_LISTS_DEADLINE_MS: a workspace with many slow credentials holds a few
   * connections for a bounded time, not one per credential.
   */
  async function allModels(workspaceUuid: string, caller: AbortSignal): Promise<unknown[]> {
    const credentials = await deps.providers.openAll(workspaceUuid);
    const signal = AbortSignal.any([
      caller,
      AbortSignal.timeout(Math.min(deps.upstream.timeoutMs, MODEL_LISTS_DEADLINE_MS)),
    ]);
    const lists: Array<unknown[] | null> = credentials.map(() => null);
    let next = 0;
    const worker = async () => {
      while (next < credentials.length && !signal.aborted) {
        const at = next++;
        lists[at] = await prefixedModels(credentials[at] as OpenedCredential, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(MODEL_LIST_CONCURRENCY, credentials.length) }, worker));
    return lists.flatMap((list) => list ?? []);
  }

  /**
   * One credential's list as upstream answered it, less the entries a key's allowlist leaves out
   * (`<credential name>/<id>`); relayed byte for byte when nothing is filtered.
   */
  function filteredRelay(answer: ProxyAnswer, text: string, name: string, allowed: readonly string[] | null) {
    if (allowed === null || answer.status < 200 || answer.status >= 300) return answer;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return answer;
    }
    const list = parsed as { data?: unknown };
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray(list.data)) return answer;
    const data = list.data.filter((m) => {
      const id = (m as { id?: unknown } | null)?.id;
      return typeof id === 'string' && modelAllowed(allowed, `${name}/${id}`);
    });
    return { ...answer, body: JSON.stringify({ ...list, data }) };
  }

  return async function models(
    workspaceUuid: string,
    credentialRef: string | undefined,
    signal: AbortSignal,
    /** The calling key's model allowlist: entries it may not call are left out (null: none are). */
    allowed: readonly string[] | null = null,
  ): Promise<ProxyAnswer> {
    if (credentialRef !== undefined) {
      const credential = await deps.providers.resolve(workspaceUuid, credentialRef);
      if (!credential)
        throw proxyError(404, 'X-Taskhook-Credential names none of your provider credentials', 'credential_not_found');
      const res = await callUpstream(deps.upstream, credential, '/models', { method: 'GET', signal });
      const { answer, text } = await relayWhole(deps.upstream, res, signal, MODEL_LIST_MAX_BYTES);
      return filteredRelay(answer, text, credential.name, allowed);
    }
    const [all, routes] = await Promise.all([allModels(workspaceUuid, signal), deps.routes(workspaceUuid)]);
    const data = all.filter((m) => modelAllowed(allowed, (m as { id: string }).id));
    for (const route of routes) {
      const id = `route:${route.name}`;
      if (!modelAllowed(allowed, id)) continue;
      const created = Math.floor(Date.parse(route.createdAt) / 1000);
      data.push({ id, object: 'model', created, owned_by: 'taskhook' });
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ object: 'list', data }),
    };
  };
}
