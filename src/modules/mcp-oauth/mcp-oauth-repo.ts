import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { McpOAuthClientsTable, McpOAuthGrantsTable, McpOAuthRequestsTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { deleteLimited, ownedBy, type PurgeStep } from '../../db/purge.js';
import type { TokenKind } from './mcp-oauth-fns.js';

export type GrantRow = McpOAuthGrantsTable;

export interface TokenRow {
  hash: string;
  kind: TokenKind;
  grant_uuid: string;
  client_id: string;
  redirect_uri: string | null;
  code_challenge: string | null;
  expires_at: string;
  ended_at: string | null;
}

/** The only SQL on the authorization server's tables. */
export const mcpOAuthRepo = {
  insertClient: (ex: Executor, row: McpOAuthClientsTable) =>
    withDbErrors(ex.insertInto('mcp_oauth_clients').values(row).execute()),

  findClient: (ex: Executor, clientId: string) =>
    withDbErrors(ex.selectFrom('mcp_oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst()),

  insertRequest: (ex: Executor, row: McpOAuthRequestsTable) =>
    withDbErrors(ex.insertInto('mcp_oauth_requests').values(row).execute()),

  /** A pending request that has not expired. */
  findRequest: (ex: Executor, id: string, now: string) =>
    withDbErrors(
      ex
        .selectFrom('mcp_oauth_requests')
        .selectAll()
        .where('id', '=', id)
        .where('expires_at', '>', now)
        .executeTakeFirst(),
    ),

  /** Answers a request: true for exactly one caller, however many try at once. */
  async takeRequest(ex: Executor, id: string, now: string): Promise<boolean> {
    const result = await withDbErrors(
      ex.deleteFrom('mcp_oauth_requests').where('id', '=', id).where('expires_at', '>', now).executeTakeFirst(),
    );
    return Number(result.numDeletedRows) === 1;
  },

  insertGrant: (ex: Executor, row: GrantRow) => withDbErrors(ex.insertInto('mcp_oauth_grants').values(row).execute()),

  findGrant: (ex: Executor, uuid: string) =>
    withDbErrors(ex.selectFrom('mcp_oauth_grants').selectAll().where('uuid', '=', uuid).executeTakeFirst()),

  /** Makes an inactive grant active; true when this call did. */
  async activateGrant(ex: Executor, uuid: string): Promise<boolean> {
    const result = await withDbErrors(
      ex
        .updateTable('mcp_oauth_grants')
        .set({ active: 1 })
        .where('uuid', '=', uuid)
        .where('active', '=', 0)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  },

  /** Revokes a grant that is not yet revoked; true when this call did. */
  async revokeGrant(ex: Executor, uuid: string, now: string): Promise<boolean> {
    const result = await withDbErrors(
      ex
        .updateTable('mcp_oauth_grants')
        .set({ revoked_at: now })
        .where('uuid', '=', uuid)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  },

  /** The user's active and revoked grants (never-activated ones are not shown), newest first. */
  listGrantsOf: (ex: Executor, userUuid: string, limit: number) =>
    withDbErrors(
      ex
        .selectFrom('mcp_oauth_grants')
        .selectAll()
        .where('user_uuid', '=', userUuid)
        .where('active', '=', 1)
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .limit(limit)
        .execute(),
    ),

  /** The live grants of a user in a workspace (member removed: they are revoked). */
  liveGrantsOf: (ex: Executor, workspaceUuid: string, userUuid: string) =>
    withDbErrors(
      ex
        .selectFrom('mcp_oauth_grants')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where('user_uuid', '=', userUuid)
        .where('revoked_at', 'is', null)
        .execute(),
    ),

  touchGrant: (ex: Executor, uuid: string, now: string) =>
    withDbErrors(ex.updateTable('mcp_oauth_grants').set({ last_used_at: now }).where('uuid', '=', uuid).execute()),

  insertToken: (ex: Executor, row: TokenRow) => withDbErrors(ex.insertInto('mcp_oauth_tokens').values(row).execute()),

  findToken: (ex: Executor, hash: string) =>
    withDbErrors(ex.selectFrom('mcp_oauth_tokens').selectAll().where('hash', '=', hash).executeTakeFirst()) as Promise<
      TokenRow | undefined
    >,

  /** Ends a code or refresh token that has not ended; true for exactly one caller. */
  async endToken(ex: Executor, hash: string, now: string): Promise<boolean> {
    const result = await withDbErrors(
      ex
        .updateTable('mcp_oauth_tokens')
        .set({ ended_at: now })
        .where('hash', '=', hash)
        .where('ended_at', 'is', null)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  },

  /** A live access token with its live, active grant. */
  findAccess: (ex: Executor, hash: string, now: string) =>
    withDbErrors(
      ex
        .selectFrom('mcp_oauth_tokens as t')
        .innerJoin('mcp_oauth_grants as g', 'g.uuid', 't.grant_uuid')
        .select(['g.uuid', 'g.workspace_uuid', 'g.user_uuid', 'g.role', 'g.resource', 'g.last_used_at'])
        .where('t.hash', '=', hash)
        .where('t.kind', '=', 'access')
        .where('t.expires_at', '>', now)
        .where('t.ended_at', 'is', null)
        .where('g.active', '=', 1)
        .where('g.revoked_at', 'is', null)
        .executeTakeFirst(),
    ),
};

export type McpOAuthRepo = typeof mcpOAuthRepo;

/** Housekeeping: expired authorization requests, codes and tokens (each kind up to `limit`). */
export async function deleteExpiredOAuth(ex: Executor, now: string, limit: number): Promise<number> {
  const requests = await deleteLimited(
    ex,
    'mcp_oauth_requests',
    ['id'],
    sql`from mcp_oauth_requests where expires_at < ${now} limit ${limit}`,
  );
  const tokens = await deleteLimited(
    ex,
    'mcp_oauth_tokens',
    ['hash'],
    sql`from mcp_oauth_tokens where expires_at < ${now} limit ${limit}`,
  );
  return Math.max(requests, tokens);
}

/** Housekeeping: dynamically registered clients made before `before` that never got an active grant. */
export function deleteUnusedClients(ex: Executor, before: string, limit: number): Promise<number> {
  return deleteLimited(
    ex,
    'mcp_oauth_clients',
    ['client_id'],
    sql`from mcp_oauth_clients where created_at < ${before} and not exists (select 1 from mcp_oauth_grants g where g.client_id = mcp_oauth_clients.client_id and g.active = 1) limit ${limit}`,
  );
}

/** The room's part of purging a deleted workspace: the tokens of its grants, then the grants. */
export const mcpOAuthPurge: ReadonlyArray<readonly [string, PurgeStep]> = [
  [
    'mcp_oauth_tokens',
    (ex, owner, limit) =>
      deleteLimited(
        ex,
        'mcp_oauth_tokens',
        ['hash'],
        sql`from mcp_oauth_tokens inner join mcp_oauth_grants g on g.uuid = mcp_oauth_tokens.grant_uuid where g.workspace_uuid = ${owner} limit ${limit}`,
      ),
  ],
  ['mcp_oauth_grants', ownedBy('mcp_oauth_grants', ['uuid'])],
];
