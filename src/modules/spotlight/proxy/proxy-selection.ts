import { modelAllowed } from '../../accounts/key-models-fns.js';
import type { ProvidersService } from '../../providers/providers-service.js';
import type { PlainTarget, RouteTarget } from '../cache/cache-key-fns.js';
import type { RouteRow } from '../routes/routes-repo.js';
import type { Target } from './proxy-attempts.js';
import { openAiError, ProxyError, proxyError, splitModel } from './proxy-fns.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** What a model name starts with to call a route. */
export const ROUTE_PREFIX = 'route:';

/** Reading a workspace's routes (the routes room's repository over the database). */
export interface RouteLookup {
  byName(workspaceUuid: string, name: string): Promise<RouteRow | undefined>;
  byUuid(workspaceUuid: string, uuid: string): Promise<RouteRow | undefined>;
  list(workspaceUuid: string): Promise<RouteRow[]>;
}

/** What a call goes to: one credential, or a route's targets in order. */
export interface Selection {
  route: RouteRow | null;
  targets: Target[];
}

/** The parts of a proxy request that choose where it goes. */
export interface SelectionRequest {
  workspaceUuid: string;
  credential?: string | undefined;
  routeUuid?: string | undefined;
}

/**
 * Where a proxy call goes and for which task: the task named by X-Taskhook-Task-Id, and the
 * credential or route its model, X-Taskhook-Credential or a runtime's route_uuid selects. Each
 * refusal is a ProxyError in OpenAI's shape (nothing is recorded before a selection).
 */
export function createSelection(deps: {
  findTask: (workspaceUuid: string, taskUuid: string) => Promise<{ uuid: string; agent_uuid: string } | undefined>;
  providers: Pick<ProvidersService, 'resolve'>;
  routes: Pick<RouteLookup, 'byName' | 'byUuid'>;
}) {
  async function attribution(workspaceUuid: string, taskId: string | undefined) {
    if (taskId === undefined) return null;
    const task = UUID_RE.test(taskId) ? await deps.findTask(workspaceUuid, taskId) : undefined;
    if (!task) throw proxyError(400, 'X-Taskhook-Task-Id does not name one of your tasks', 'invalid_task_id');
    return { taskUuid: task.uuid, agentUuid: task.agent_uuid };
  }

  /** A route's targets with their credentials opened; a target whose credential is gone is skipped. */
  async function routeSelection(workspaceUuid: string, route: RouteRow): Promise<Selection> {
    const opened = await Promise.all(
      route.targets.map((t) => deps.providers.resolve(workspaceUuid, t.provider_credential_uuid)),
    );
    const targets = route.targets.flatMap((t, i) => {
      const credential = opened[i];
      return credential ? [{ credential, upstreamModel: t.model }] : [];
    });
    if (targets.length === 0)
      throw proxyError(404, `The route "${route.name}" has no provider credential left`, 'credential_not_found');
    return { route, targets };
  }

  async function select(req: SelectionRequest, model: string): Promise<Selection> {
    if (req.routeUuid !== undefined) {
      const route = await deps.routes.byUuid(req.workspaceUuid, req.routeUuid);
      if (!route) throw proxyError(404, 'The route of this agent no longer exists', 'route_not_found');
      return routeSelection(req.workspaceUuid, route);
    }
    // A route name holds neither ":" nor "/", so `route:<name>` never reads as <credential>/<model>.
    if (model.startsWith(ROUTE_PREFIX)) {
      const name = model.slice(ROUTE_PREFIX.length);
      const route = await deps.routes.byName(req.workspaceUuid, name);
      if (!route) throw proxyError(404, `No route is named "${name}"`, 'route_not_found', 'model');
      return routeSelection(req.workspaceUuid, route);
    }
    if (req.credential !== undefined) {
      const credential = await deps.providers.resolve(req.workspaceUuid, req.credential);
      if (!credential)
        throw proxyError(404, 'X-Taskhook-Credential names none of your provider credentials', 'credential_not_found');
      return { route: null, targets: [{ credential, upstreamModel: model }] };
    }
    const split = splitModel(model);
    const credential = split && (await deps.providers.resolve(req.workspaceUuid, split.credential));
    if (!split || !credential || credential.name !== split.credential) {
      throw proxyError(
        404,
        `The model "${model}" does not exist: use <credential name>/<model>, a route as route:<name>, or name a credential in X-Taskhook-Credential`,
        'model_not_found',
        'model',
      );
    }
    return { route: null, targets: [{ credential, upstreamModel: split.upstream }] };
  }

  return { attribution, select };
}

/** The cache key's target: the credential and model, or the route and its credentials, as they are now. */
export function keyTarget(sel: Selection): PlainTarget | RouteTarget {
  const first = sel.targets[0] as Target;
  return sel.route
    ? {
        kind: 'route' as const,
        routeUuid: sel.route.uuid,
        routeUpdatedAt: sel.route.updatedAt,
        credentialUpdatedAts: sel.targets.map((t) => t.credential.updatedAt),
      }
    : {
        kind: 'credential' as const,
        credentialUuid: first.credential.uuid,
        credentialUpdatedAt: first.credential.updatedAt,
        upstreamModel: first.upstreamModel,
      };
}

/**
 * The model identifier a key's allowlist is checked on: `route:<name>` for a route, else
 * `<credential name>/<upstream model>` (the body's model after X-Taskhook-Credential's name).
 */
export function modelIdentifier(sel: Selection): string {
  const first = sel.targets[0] as Target;
  return sel.route ? `${ROUTE_PREFIX}${sel.route.name}` : `${first.credential.name}/${first.upstreamModel}`;
}

/**
 * Refuses a call whose key may not use the model it selected (null: every model).
 * @throws ProxyError 403 model_not_allowed (type permission_error, param model).
 */
export function checkAllowlist(models: readonly string[] | null | undefined, sel: Selection): void {
  if (models === null || models === undefined) return;
  const identifier = modelIdentifier(sel);
  if (modelAllowed(models, identifier)) return;
  const message = `This key may not use model ${JSON.stringify(identifier)}`;
  throw new ProxyError(403, openAiError(message, 'permission_error', 'model_not_allowed', 'model'));
}
