import type { Db, Executor } from '../../db/connect.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { afterCommit } from '../../db/transactions.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import { randomBase62, sha256Hex } from '../../lib/crypto.js';
import { isUuid, newId } from '../../lib/ids.js';
import { type Acting, type Principal, type Role, roleAtLeast } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { announceCredentialChange } from '../accounts/credential-changes.js';
import { recordAudit } from '../audit/audit-repo.js';
import type { Clients } from './mcp-oauth-clients.js';
import {
  CHALLENGE_RE,
  type ClientInfo,
  newToken,
  normalizeResource,
  OAuthError,
  redirectMatches,
  SCOPE,
  withQuery,
} from './mcp-oauth-fns.js';
import type { GrantRow, McpOAuthRepo } from './mcp-oauth-repo.js';

const REQUEST_TTL_MS = 600_000;
export const MAX_GRANTS_LISTED = 1000;

export type RevokeReason = 'user' | 'client' | 'code_reuse' | 'refresh_reuse' | 'member_removed';

/** Where an authorize request goes: the client's redirect URI (an error) or the consent page. */
export interface AuthorizeAnswer {
  location: string;
}

export interface McpOAuthDeps {
  db: Db;
  repo: McpOAuthRepo;
  clients: Clients;
  clock: Clock;
  /** `{base_url}`: the issuer. */
  issuer: string;
  /** `{base_url}/mcp`: the one protected resource. */
  resource: string;
  codeTtlMs: number;
  roleOf(ex: Executor, workspaceUuid: string, userUuid: string): Promise<Role | undefined>;
  workspaceNames(ex: Executor, uuids: string[]): Promise<Map<string, string>>;
  /** After a commit that ended a grant: its user's streams re-check their credential. */
  credentialsChanged(userUuid: string): void;
}

type Query = Record<string, string | string[] | undefined>;

/**
 * The authorization endpoint, the consent API and the user's grants (docs/mcp.md, "Connecting
 * with OAuth").
 */
export function createMcpOAuthService(deps: McpOAuthDeps) {
  const { db, repo } = deps;
  const now = () => deps.clock.now();
  const mcpResource = normalizeResource(deps.resource);

  /** Do all given `resource` values name this server's MCP resource (absent: yes)? */
  function resourcesOk(value: string | string[] | undefined): boolean {
    const given = value === undefined ? [] : [value].flat();
    return given.every((r) => normalizeResource(r) === mcpResource);
  }

  /**
   * `GET /oauth/authorize`.
   * @throws OAuthError 400 invalid_client or invalid_request when the redirect URI cannot be trusted yet.
   */
  async function authorize(query: Query): Promise<AuthorizeAnswer> {
    const one = (name: string) => {
      const value = query[name];
      if (Array.isArray(value)) throw new OAuthError(400, 'invalid_request', `${name} is given more than once`);
      return value;
    };
    const clientId = one('client_id');
    if (!clientId) throw new OAuthError(400, 'invalid_client', 'client_id is required');
    const client = await deps.clients.resolve(clientId);
    const redirectUri = one('redirect_uri');
    if (!redirectUri || !redirectMatches(client.redirect_uris, redirectUri)) {
      throw new OAuthError(400, 'invalid_request', 'redirect_uri is missing or not registered for this client');
    }
    const stateValue = query.state;
    const state = typeof stateValue === 'string' && stateValue.length <= 2048 ? stateValue : null;
    const fail = (error: string, description: string): AuthorizeAnswer => ({
      location: withQuery(redirectUri, { error, error_description: description, state, iss: deps.issuer }),
    });
    const names = ['response_type', 'code_challenge', 'code_challenge_method', 'state', 'scope'];
    const twice = names.find((name) => Array.isArray(query[name]));
    if (twice) return fail('invalid_request', `${twice} is given more than once`);
    if (query.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
    const challenge = query.code_challenge as string | undefined;
    if (!challenge || !CHALLENGE_RE.test(challenge)) {
      return fail('invalid_request', 'code_challenge must be 43 characters of A-Za-z0-9-_ (PKCE)');
    }
    if (query.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
    if (typeof stateValue === 'string' && stateValue.length > 2048) {
      return fail('invalid_request', 'state is longer than 2048 characters');
    }
    if (!resourcesOk(query.resource)) return fail('invalid_target', `resource must be ${deps.resource}`);
    const id = randomBase62(32);
    const { secretHash: _secret, ...known } = client;
    await repo.insertRequest(db.kysely, {
      id,
      client: toDbJson(known),
      redirect_uri: redirectUri,
      code_challenge: challenge,
      state,
      resource: deps.resource,
      expires_at: iso(now() + REQUEST_TTL_MS),
    });
    return { location: `${deps.issuer}/dashboard/mcp/authorize?request_id=${id}` };
  }

  async function pending(id: string) {
    const row = id.length <= 128 ? await repo.findRequest(db.kysely, id, iso(now())) : undefined;
    if (!row) throw notFound('Authorization request');
    return { ...row, clientInfo: fromDbJson<ClientInfo>(row.client) };
  }

  /** `GET /oauth/authorization_requests/:id`. @throws AppError NOT_FOUND (unknown, expired or answered). */
  async function describe(id: string) {
    const row = await pending(id);
    const c = row.clientInfo;
    return {
      request_id: row.id,
      client: {
        client_id: c.client_id,
        client_name: c.client_name,
        client_uri: c.client_uri,
        logo_uri: c.logo_uri,
        registration: c.registration,
      },
      redirect_uri: row.redirect_uri,
      scope: SCOPE,
      resource: row.resource,
      expires_at: row.expires_at,
    };
  }

  /**
   * `POST /oauth/authorization_requests/:id/approve`: the grant (inactive until its code is
   * exchanged) and its code, answered once.
   * @throws AppError NOT_FOUND (request, workspace), INVALID_REQUEST (body), FORBIDDEN (role above the user's).
   */
  async function approve(principal: Principal, acting: Acting, id: string, body: unknown) {
    const row = await pending(id);
    const { workspaceUuid, role } = approvalBody(body);
    const held = await deps.roleOf(db.kysely, workspaceUuid, principal.userUuid);
    if (!held) throw notFound('Workspace');
    if (!roleAtLeast(held, role)) throw new AppError('FORBIDDEN', `Your role in this workspace is ${held}`);
    const code = newToken('code');
    const c = row.clientInfo;
    await db.transaction(async (trx) => {
      if (!(await repo.takeRequest(trx, id, iso(now())))) throw notFound('Authorization request');
      const grantUuid = newId();
      await repo.insertGrant(trx, {
        uuid: grantUuid,
        workspace_uuid: workspaceUuid,
        user_uuid: principal.userUuid,
        client_id: c.client_id,
        client_name: c.client_name,
        client_uri: c.client_uri,
        registration: c.registration,
        role,
        resource: row.resource,
        approval: toDbJson({
          actor: acting.actor,
          ip: acting.ip,
          requestId: acting.requestId,
          clientRequestId: acting.clientRequestId,
        }),
        created_at: iso(now()),
        active: 0,
        last_used_at: null,
        revoked_at: null,
      });
      await repo.insertToken(trx, {
        hash: sha256Hex(code),
        kind: 'code',
        grant_uuid: grantUuid,
        client_id: c.client_id,
        redirect_uri: row.redirect_uri,
        code_challenge: row.code_challenge,
        expires_at: iso(now() + deps.codeTtlMs),
        ended_at: null,
      });
    });
    return { redirect_to: withQuery(row.redirect_uri, { code, state: row.state, iss: deps.issuer }) };
  }

  /** `POST /oauth/authorization_requests/:id/deny`. @throws AppError NOT_FOUND. */
  async function deny(id: string) {
    const row = await pending(id);
    if (!(await repo.takeRequest(db.kysely, id, iso(now())))) throw notFound('Authorization request');
    const redirect = withQuery(row.redirect_uri, {
      error: 'access_denied',
      error_description: 'The user denied the request',
      state: row.state,
      iss: deps.issuer,
    });
    return { redirect_to: redirect };
  }

  /** `GET /auth/mcp_grants`: the user's grants in every workspace, newest first. */
  async function listGrants(userUuid: string) {
    const rows = await repo.listGrantsOf(db.kysely, userUuid, MAX_GRANTS_LISTED);
    const names = await deps.workspaceNames(db.kysely, [...new Set(rows.map((r) => r.workspace_uuid))]);
    return rows.map((g) => ({
      uuid: g.uuid,
      client: {
        client_id: g.client_id,
        client_name: g.client_name,
        client_uri: g.client_uri,
        registration: g.registration as ClientInfo['registration'],
      },
      workspace: { uuid: g.workspace_uuid, name: names.get(g.workspace_uuid) ?? null },
      role: g.role,
      scope: SCOPE,
      resource: g.resource,
      created_at: g.created_at,
      last_used_at: g.last_used_at,
      revoked_at: g.revoked_at,
    }));
  }

  /**
   * Ends a grant (every token of it stops working) and audits it, in the caller's transaction.
   * True when this call ended it.
   */
  async function endGrant(trx: Executor, grant: GrantRow, reason: RevokeReason, acting: Omit<Acting, 'workspaceUuid'>) {
    if (!(await repo.revokeGrant(trx, grant.uuid, iso(now())))) return false;
    if (grant.active === 1) {
      await recordAudit(
        trx,
        { ...acting, workspaceUuid: grant.workspace_uuid },
        {
          action: 'mcp_grant.revoke',
          target: { type: 'mcp_grant', uuid: grant.uuid },
          details: { client_id: grant.client_id, client_name: grant.client_name, reason },
        },
      );
    }
    // Streams of the grant's tokens re-check their credential, on every instance (PostgreSQL).
    await announceCredentialChange(trx, grant.user_uuid);
    afterCommit(trx, () => deps.credentialsChanged(grant.user_uuid));
    return true;
  }

  /** `DELETE /auth/mcp_grants/:uuid`. @throws AppError NOT_FOUND (unknown or another user's). */
  async function revokeGrant(principal: Principal, acting: Acting, uuid: string) {
    const grant = isUuid(uuid) ? await repo.findGrant(db.kysely, uuid.toLowerCase()) : undefined;
    if (!grant || grant.user_uuid !== principal.userUuid || grant.active !== 1) throw notFound('Grant');
    await db.transaction((trx) => endGrant(trx, grant, 'user', acting));
  }

  /** The user left or was removed from a workspace: their grants there end (`member_removed`). */
  async function endGrantsOfMember(trx: Executor, acting: Acting, workspaceUuid: string, userUuid: string) {
    for (const grant of await repo.liveGrantsOf(trx, workspaceUuid, userUuid)) {
      await endGrant(trx, grant, 'member_removed', acting);
    }
  }

  return { authorize, describe, approve, deny, listGrants, revokeGrant, endGrant, endGrantsOfMember, resourcesOk };
}

export type McpOAuthService = ReturnType<typeof createMcpOAuthService>;

/** The consent's body: `{workspace_uuid, role}`, nothing else. @throws AppError INVALID_REQUEST naming the field. */
function approvalBody(body: unknown): { workspaceUuid: string; role: 'viewer' | 'member' } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('body', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => k !== 'workspace_uuid' && k !== 'role');
  if (unknown) throw invalid(unknown, 'is not a known field');
  if (typeof b.workspace_uuid !== 'string' || !isUuid(b.workspace_uuid))
    throw invalid('workspace_uuid', 'must be a UUID');
  if (b.role !== 'viewer' && b.role !== 'member') throw invalid('role', 'must be viewer or member');
  return { workspaceUuid: b.workspace_uuid.toLowerCase(), role: b.role };
}
