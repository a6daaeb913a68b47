import type { Db } from '../../db/connect.js';
import { AUTH_MESSAGES, AuthError, notFound } from '../../http/errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { Log } from '../../lib/log.js';
import { type AuthMode, lowerRole, type Principal, type Role } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { readCredential } from './accounts-fns.js';
import type { AccountsRepo, CredentialTable, CredentialWithUser, UserRow } from './accounts-repo.js';
import type { SessionTokens } from './accounts-tokens.js';
import type { CredentialCache } from './credential-cache.js';
import type { MembershipsRepo } from './memberships-repo.js';

/** `last_used_at` is refreshed at most this often per credential. */
const TOUCH_INTERVAL_MS = 60_000;

type Headers = Record<string, string | string[] | undefined>;

/**
 * Finds the grant of a live MCP OAuth access token for this server's MCP resource (null when the
 * token is unknown, expired, revoked, its grant ended, or issued for another resource).
 */
export type McpTokenLookup = (
  token: string,
) => Promise<{ grantUuid: string; workspaceUuid: string; userUuid: string; role: Role } | null>;

/**
 * Turns request headers into a Principal for a route's auth mode.
 * @throws AuthError 401 (missing, malformed, unknown, revoked or expired credential, or a credential
 * kind the mode does not take silently), 403 (platform key on a session-only route, unverified e-mail).
 */
export function createAuthenticator(deps: {
  db: Db;
  repo: Pick<AccountsRepo, 'findLiveCredential' | 'findUserByUuid' | 'touchCredential'>;
  tokens: SessionTokens;
  clock: Clock;
  log: Log;
  /** Authenticated credentials by hash, when the database announces changes (PostgreSQL). */
  cache?: CredentialCache;
  /** MCP OAuth access tokens (accepted in mode `mcp` only); absent when the authorization server is off. */
  mcpTokens?: McpTokenLookup;
  /** The user's current role in a workspace (needed with `mcpTokens`). */
  roleOf?: MembershipsRepo['roleOf'];
}) {
  const { db, repo, clock } = deps;

  function principal(
    user: UserRow,
    via: Principal['via'],
    found:
      | (Pick<CredentialWithUser, 'credentialUuid' | 'name' | 'workspaceUuid' | 'role'> & {
          models?: readonly string[] | null;
        })
      | null,
  ): Principal {
    // A disabled account's sessions, keys and tokens all stop working, as if revoked.
    if (user.disabled) throw new AuthError(401, AUTH_MESSAGES.invalid);
    if (!user.emailVerified) throw new AuthError(403, AUTH_MESSAGES.unverified);
    return {
      userUuid: user.uuid,
      email: user.email,
      // A session acts in its user's personal workspace (the user's uuid, owner) until a request
      // names another (`resolveWorkspace`).
      workspaceUuid: found?.workspaceUuid ?? user.uuid,
      role: found?.role ?? 'owner',
      keyName: found?.name ?? null,
      via,
      credentialUuid: found?.credentialUuid ?? null,
      keyModels: found?.models ?? null,
      agentsEnabled: user.agentsEnabled,
      tokenVersion: user.tokenVersion,
    };
  }

  // Awaited (at most once a minute per credential) so last_used_at is exact when the response
  // leaves; a failure to record it never fails the request.
  async function touch(table: CredentialTable, found: CredentialWithUser) {
    const now = clock.now();
    if (found.lastUsedAt && now - Date.parse(found.lastUsedAt) < TOUCH_INTERVAL_MS) return;
    // Recorded on the (possibly cached) row first, so requests in flight do not all write it.
    found.lastUsedAt = iso(now);
    await db
      .transaction((trx) => repo.touchCredential(trx, table, found.credentialUuid, iso(now)))
      .catch((err) => deps.log.warn({ err }, 'could not record last_used_at'));
  }

  async function byHash(table: CredentialTable, secret: string): Promise<CredentialWithUser> {
    const hash = sha256Hex(secret);
    const cacheKey = table === 'platform_keys' ? hash : `token:${hash}`;
    const load = () => repo.findLiveCredential(db.kysely, table, hash);
    const found = await (deps.cache ? deps.cache.read(cacheKey, load) : load());
    if (!found) throw new AuthError(401, AUTH_MESSAGES.invalid);
    await touch(table, found);
    return found;
  }

  /**
   * An MCP OAuth access token acts like a platform key of its grant's workspace, with the lower of
   * the grant's role and the user's current role there; only on `/mcp` (mode `mcp`).
   */
  async function mcpPrincipal(token: string, mode: Exclude<AuthMode, 'none'>): Promise<Principal> {
    if (mode !== 'mcp' || !deps.mcpTokens || !deps.roleOf) throw new AuthError(401, AUTH_MESSAGES.invalid);
    const grant = await deps.mcpTokens(token);
    const user = grant && (await repo.findUserByUuid(db.kysely, grant.userUuid));
    const role = grant && (await deps.roleOf(db.kysely, grant.workspaceUuid, grant.userUuid));
    if (!grant || !user || !role) throw new AuthError(401, AUTH_MESSAGES.invalid);
    return principal(user, 'mcp_token', {
      credentialUuid: grant.grantUuid,
      name: null,
      workspaceUuid: grant.workspaceUuid,
      role: lowerRole(grant.role, role),
    });
  }

  return async function authenticate(headers: Headers, mode: Exclude<AuthMode, 'none'>): Promise<Principal> {
    const credential = readCredential(headers);
    switch (credential.kind) {
      case 'none':
        throw new AuthError(401, AUTH_MESSAGES.missing);
      case 'malformed':
        throw new AuthError(401, AUTH_MESSAGES.invalid);
      case 'ingest_token': {
        if (mode !== 'ingest') throw new AuthError(401, AUTH_MESSAGES.invalid);
        const found = await byHash('ingest_tokens', credential.value);
        return principal(found.user, 'ingest_token', found);
      }
      case 'platform_key': {
        if (mode === 'ingest') throw new AuthError(401, AUTH_MESSAGES.invalid);
        const found = await byHash('platform_keys', credential.value);
        if (mode === 'session') throw new AuthError(403, AUTH_MESSAGES.sessionRequired);
        return principal(found.user, 'platform_key', found);
      }
      case 'mcp_token':
        return mcpPrincipal(credential.value, mode);
      case 'jwt': {
        if (mode === 'ingest') throw new AuthError(401, AUTH_MESSAGES.invalid);
        const claims = await deps.tokens.verify(credential.value);
        const user = claims && (await repo.findUserByUuid(db.kysely, claims.userUuid));
        if (!claims || !user || user.tokenVersion !== claims.tokenVersion) {
          throw new AuthError(401, AUTH_MESSAGES.invalid);
        }
        return principal(user, 'jwt', null);
      }
    }
  };
}

export type Authenticate = ReturnType<typeof createAuthenticator>;

/**
 * Moves an authenticated principal into the workspace a request names (the
 * `X-Taskhook-Workspace` header, or the `:id` of a `/workspaces/:id/…` path). A session may enter
 * any live workspace its user is a member of, with its role there; a key or token only its own.
 * @throws AppError 404 NOT_FOUND when the workspace is unknown, deleted or not the caller's.
 */
export function createWorkspaceResolver(deps: { db: Db; roleOf: MembershipsRepo['roleOf'] }) {
  return async function resolveWorkspace(principal: Principal, workspaceUuid: string): Promise<Principal> {
    if (workspaceUuid === principal.workspaceUuid) return principal;
    if (principal.via !== 'jwt') throw notFound('Workspace');
    const role = await deps.roleOf(deps.db.kysely, workspaceUuid, principal.userUuid);
    if (!role) throw notFound('Workspace');
    return { ...principal, workspaceUuid, role };
  };
}

export type ResolveWorkspace = ReturnType<typeof createWorkspaceResolver>;
