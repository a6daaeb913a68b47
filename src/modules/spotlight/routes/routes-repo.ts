import type { Selectable } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import type { SpotlightRoutesTable } from '../../../db/database.js';
import { withDbErrors } from '../../../db/errors.js';
import { fromDbJson, toDbJson } from '../../../db/json.js';
import type { RetryOn } from './routes-schemas.js';

/** One target of a route. */
export interface RouteTarget {
  provider_credential_uuid: string;
  model: string;
}

/** A route as the service works with it. */
export interface RouteRow {
  uuid: string;
  workspaceUuid: string;
  name: string;
  targets: RouteTarget[];
  retryOn: RetryOn[];
  cacheTtlSeconds: number | null;
  createdAt: string;
  updatedAt: string;
}

function toRow(r: Selectable<SpotlightRoutesTable>): RouteRow {
  return {
    uuid: r.uuid,
    workspaceUuid: r.workspace_uuid,
    name: r.name,
    targets: fromDbJson<RouteTarget[]>(r.targets),
    retryOn: fromDbJson<RetryOn[]>(r.retry_on),
    cacheTtlSeconds: r.cache_ttl_seconds,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const columns = (r: RouteRow) => ({
  name: r.name,
  targets: toDbJson(r.targets),
  retry_on: toDbJson(r.retryOn),
  cache_ttl_seconds: r.cacheTtlSeconds,
  updated_at: r.updatedAt,
});

/** The only code that touches the spotlight_routes table. */
export const routesRepo = {
  insert(ex: Executor, r: RouteRow) {
    return withDbErrors(
      ex
        .insertInto('spotlight_routes')
        .values({ uuid: r.uuid, workspace_uuid: r.workspaceUuid, created_at: r.createdAt, ...columns(r) })
        .execute(),
    );
  },

  update(ex: Executor, r: RouteRow) {
    return withDbErrors(ex.updateTable('spotlight_routes').set(columns(r)).where('uuid', '=', r.uuid).execute());
  },

  remove(ex: Executor, uuid: string) {
    return withDbErrors(ex.deleteFrom('spotlight_routes').where('uuid', '=', uuid).execute());
  },

  async findOwned(ex: Executor, workspaceUuid: string, uuid: string): Promise<RouteRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('spotlight_routes')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where('uuid', '=', uuid)
        .executeTakeFirst(),
    );
    return row && toRow(row);
  },

  async findByName(ex: Executor, workspaceUuid: string, name: string): Promise<RouteRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('spotlight_routes')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where('name', '=', name)
        .executeTakeFirst(),
    );
    return row && toRow(row);
  },

  /** Newest first (at most 100 per workspace, so never paged). */
  async list(ex: Executor, workspaceUuid: string): Promise<RouteRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_routes')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .execute(),
    );
    return rows.map(toRow);
  },

  async count(ex: Executor, workspaceUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('spotlight_routes')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** Names of the workspace's routes with a target on this credential (a credential they name cannot go). */
  async namingCredential(ex: Executor, workspaceUuid: string, credentialUuid: string): Promise<string[]> {
    const routes = await routesRepo.list(ex, workspaceUuid);
    return routes
      .filter((r) => r.targets.some((t) => t.provider_credential_uuid === credentialUuid))
      .map((r) => r.name);
  },
};

export type RoutesRepo = typeof routesRepo;
