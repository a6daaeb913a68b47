import type { Db, Executor } from '../../../db/connect.js';
import { UniqueViolationError } from '../../../db/errors.js';
import { AppError, invalid, notFound } from '../../../http/errors.js';
import { newId } from '../../../lib/ids.js';
import type { Acting } from '../../../lib/principal.js';
import { type Clock, iso } from '../../../lib/time.js';
import { recordAudit } from '../../audit/audit-repo.js';
import type { ProvidersRepo } from '../../providers/providers-repo.js';
import type { RouteRow, RoutesRepo, RouteTarget } from './routes-repo.js';
import {
  type CreateRouteInput,
  MAX_ROUTES_PER_WORKSPACE,
  type PatchRouteInput,
  RETRY_ON_VALUES,
  type RetryOn,
  type RouteView,
} from './routes-schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const duplicateName = () => invalid('name', 'is already used by another of your routes');

/** The route as the API returns it. */
export const routeView = (r: RouteRow): RouteView => ({
  uuid: r.uuid,
  name: r.name,
  targets: r.targets.map((t) => ({ provider_credential_uuid: t.provider_credential_uuid, model: t.model })),
  retry_on: r.retryOn,
  cache_ttl_seconds: r.cacheTtlSeconds,
  created_at: r.createdAt,
  updated_at: r.updatedAt,
});

/** Distinct values, returned in their documented order; a repeated value is a 400. */
function normaliseRetryOn(values: readonly RetryOn[] | undefined): RetryOn[] {
  if (values === undefined) return [...RETRY_ON_VALUES];
  if (new Set(values).size !== values.length) throw invalid('retry_on', 'values must be distinct');
  return RETRY_ON_VALUES.filter((v) => values.includes(v));
}

/**
 * Fallback routes of the model proxy: CRUD, each change audited in its own transaction
 * (`route.create`/`route.update`/`route.delete`, details `{name}`).
 */
export function createRoutesService(deps: {
  db: Db;
  repo: RoutesRepo;
  providers: Pick<ProvidersRepo, 'findOwned'>;
  /** The workspace's row lock (the workspaces room), held while the 100-route cap is counted. */
  lockWorkspace: (trx: Executor, workspaceUuid: string) => Promise<void>;
  /** The workspace's live agents with their runtimes (the agents room): a route they name cannot go. */
  liveRuntimes: (ex: Executor, workspaceUuid: string) => Promise<Array<{ name: string; runtime: unknown }>>;
  clock: Clock;
}) {
  const { db, repo } = deps;
  const now = () => iso(deps.clock.now());

  /** Every target names one of the workspace's credentials and a model of 1–256 characters. */
  async function checkTargets(ex: Executor, workspaceUuid: string, targets: readonly RouteTarget[]) {
    for (const [i, t] of targets.entries()) {
      const field = `targets[${i}]`;
      const owned =
        UUID.test(t.provider_credential_uuid) &&
        (await deps.providers.findOwned(ex, workspaceUuid, t.provider_credential_uuid.toLowerCase()));
      if (!owned) throw invalid(`${field}.provider_credential_uuid`, 'is not one of your provider credentials');
      if (t.model.length < 1 || t.model.length > 256) throw invalid(`${field}.model`, 'must be 1–256 characters');
    }
    return targets.map((t) => ({ provider_credential_uuid: t.provider_credential_uuid.toLowerCase(), model: t.model }));
  }

  async function requireOwned(workspaceUuid: string, uuid: string, ex: Executor = db.kysely) {
    const found = await repo.findOwned(ex, workspaceUuid, uuid);
    if (!found) throw notFound('Route');
    return found;
  }

  const uniqueName = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (err instanceof UniqueViolationError) throw duplicateName();
      throw err;
    }
  };

  return {
    create(acting: Acting, input: CreateRouteInput): Promise<RouteView> {
      const { workspaceUuid } = acting;
      const retryOn = normaliseRetryOn(input.retry_on);
      return uniqueName(() =>
        db.transaction(async (trx) => {
          await deps.lockWorkspace(trx, workspaceUuid);
          const targets = await checkTargets(trx, workspaceUuid, input.targets);
          if ((await repo.count(trx, workspaceUuid)) >= MAX_ROUTES_PER_WORKSPACE) {
            throw invalid('routes', `at most ${MAX_ROUTES_PER_WORKSPACE} per workspace`);
          }
          const at = now();
          const row: RouteRow = {
            uuid: newId(),
            workspaceUuid,
            name: input.name,
            targets,
            retryOn,
            cacheTtlSeconds: input.cache_ttl_seconds ?? null,
            createdAt: at,
            updatedAt: at,
          };
          await repo.insert(trx, row);
          await recordAudit(trx, acting, {
            action: 'route.create',
            target: { type: 'route', uuid: row.uuid },
            details: { name: row.name },
          });
          return routeView(row);
        }),
      );
    },

    list: async (workspaceUuid: string) => (await repo.list(db.kysely, workspaceUuid)).map(routeView),

    get: async (workspaceUuid: string, uuid: string) => routeView(await requireOwned(workspaceUuid, uuid)),

    patch(acting: Acting, uuid: string, input: PatchRouteInput): Promise<RouteView> {
      const retryOn = input.retry_on === undefined ? undefined : normaliseRetryOn(input.retry_on);
      return uniqueName(() =>
        db.transaction(async (trx) => {
          const current = await requireOwned(acting.workspaceUuid, uuid, trx);
          const targets =
            input.targets === undefined
              ? current.targets
              : await checkTargets(trx, acting.workspaceUuid, input.targets);
          const next: RouteRow = {
            ...current,
            name: input.name ?? current.name,
            targets,
            retryOn: retryOn ?? current.retryOn,
            cacheTtlSeconds: input.cache_ttl_seconds === undefined ? current.cacheTtlSeconds : input.cache_ttl_seconds,
            // A new updated_at also makes the route's earlier cache entries unreachable.
            updatedAt: now(),
          };
          await repo.update(trx, next);
          await recordAudit(trx, acting, {
            action: 'route.update',
            target: { type: 'route', uuid },
            details: { name: next.name },
          });
          return routeView(next);
        }),
      );
    },

    /**
     * Deletes a route; records keep its name.
     * @throws AppError NOT_FOUND, or ROUTE_IN_USE while an agent's runtime names it.
     */
    async remove(acting: Acting, uuid: string) {
      await db.transaction(async (trx) => {
        const { name } = await requireOwned(acting.workspaceUuid, uuid, trx);
        const agents = (await deps.liveRuntimes(trx, acting.workspaceUuid))
          .filter((a) => (a.runtime as { route_uuid?: unknown } | null)?.route_uuid === uuid)
          .map((a) => a.name);
        if (agents.length > 0) {
          throw new AppError(
            'ROUTE_IN_USE',
            `The route is used by agent ${agents.map((a) => JSON.stringify(a)).join(', ')}; change their runtime first`,
          );
        }
        await repo.remove(trx, uuid);
        await recordAudit(trx, acting, { action: 'route.delete', target: { type: 'route', uuid }, details: { name } });
      });
    },
  };
}

export type RoutesService = ReturnType<typeof createRoutesService>;
