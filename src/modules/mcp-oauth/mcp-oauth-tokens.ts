import type { Db, Executor } from '../../db/connect.js';
import { fromDbJson } from '../../db/json.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { Acting, RequestOrigin, Role } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { recordAudit } from '../audit/audit-repo.js';
import type { ClientInfo } from './mcp-oauth-fns.js';
import { newToken, OAuthError, pkceMatches, SCOPE, type TokenKind, tokenKindOf } from './mcp-oauth-fns.js';
import type { GrantRow, McpOAuthRepo, TokenRow } from './mcp-oauth-repo.js';
import type { McpOAuthDeps, McpOAuthService } from './mcp-oauth-service.js';

/** `last_used_at` of a grant is written at most this often. */
const TOUCH_INTERVAL_MS = 60_000;

type Headers = Record<string, string | string[] | undefined>;
type Form = Record<string, string | string[]>;

const invalidGrant = (why: string) => new OAuthError(400, 'invalid_grant', why);

/**
 * The token endpoint (authorization code with PKCE, rotating refresh tokens), revocation
 * (RFC 7009) and the lookup of access tokens presented on `/mcp`.
 */
export function createMcpOAuthTokens(
  deps: McpOAuthDeps & {
    accessTtlMs: number;
    refreshTtlMs: number;
    /** Is the user live and not disabled? A disabled or deleted user's grants issue nothing. */
    userActive(ex: Executor, userUuid: string): Promise<boolean>;
  },
  grants: Pick<McpOAuthService, 'endGrant' | 'resourcesOk'>,
) {
  const { db, repo } = deps;
  const now = () => deps.clock.now();
  const clientActor = (client: ClientInfo, origin: RequestOrigin): Omit<Acting, 'workspaceUuid'> => ({
    ...origin,
    actor: { type: 'mcp_client', client_id: client.client_id, client_name: client.client_name },
  });

  /** Single values of a form; a parameter given twice (other than `resource`) is invalid_request. */
  function single(form: Form): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(form)) {
      if (key === 'resource') continue;
      if (Array.isArray(value)) throw new OAuthError(400, 'invalid_request', `${key} is given more than once`);
      out[key] = value;
    }
    return out;
  }

  async function issue(trx: Executor, grant: GrantRow, client: ClientInfo) {
    const access = newToken('access');
    const base = {
      grant_uuid: grant.uuid,
      client_id: client.client_id,
      redirect_uri: null,
      code_challenge: null,
      ended_at: null,
    };
    await repo.insertToken(trx, {
      ...base,
      hash: sha256Hex(access),
      kind: 'access',
      expires_at: iso(now() + deps.accessTtlMs),
    });
    const answer: Record<string, unknown> = {
      access_token: access,
      token_type: 'Bearer',
      expires_in: Math.round(deps.accessTtlMs / 1000),
      scope: SCOPE,
    };
    if (client.grant_types.includes('refresh_token')) {
      const refresh = newToken('refresh');
      await repo.insertToken(trx, {
        ...base,
        hash: sha256Hex(refresh),
        kind: 'refresh',
        expires_at: iso(now() + deps.refreshTtlMs),
      });
      answer.refresh_token = refresh;
    }
    return answer;
  }

  /** A presented code or refresh token of that kind, found by its hash. */
  async function find(value: string | undefined, kind: TokenKind): Promise<TokenRow | undefined> {
    if (!value || tokenKindOf(value) !== kind) return undefined;
    const row = await repo.findToken(db.kysely, sha256Hex(value));
    return row?.kind === kind ? row : undefined;
  }

  /**
   * Ends the grant of a code or refresh token presented again, with all its tokens (audited even
   * though the request itself is refused), then refuses.
   */
  async function reuse(
    row: TokenRow,
    client: ClientInfo,
    origin: RequestOrigin,
    reason: 'code_reuse' | 'refresh_reuse',
  ) {
    const grant = await repo.findGrant(db.kysely, row.grant_uuid);
    if (grant?.active === 1)
      await db.transaction((trx) => grants.endGrant(trx, grant, reason, clientActor(client, origin)));
    return invalidGrant('The grant was already used; it is now revoked');
  }

  async function exchangeCode(client: ClientInfo, p: Record<string, string>, origin: RequestOrigin) {
    if (!p.code || !p.redirect_uri || !p.code_verifier) {
      throw new OAuthError(400, 'invalid_request', 'code, redirect_uri and code_verifier are required');
    }
    const row = await find(p.code, 'code');
    if (!row) throw invalidGrant('Unknown code');
    // Consumed by this request whatever happens next; a second presentation is a reuse.
    if (!(await repo.endToken(db.kysely, row.hash, iso(now())))) throw await reuse(row, client, origin, 'code_reuse');
    if (row.client_id !== client.client_id) throw invalidGrant('The code was issued to another client');
    if (Date.parse(row.expires_at) <= now()) throw invalidGrant('The code has expired');
    if (row.redirect_uri !== p.redirect_uri) throw invalidGrant('redirect_uri differs from the authorization request');
    if (!pkceMatches(p.code_verifier, row.code_challenge ?? '')) throw invalidGrant('code_verifier does not match');
    return db.transaction(async (trx) => {
      const grant = await repo.findGrant(trx, row.grant_uuid);
      if (!grant || !(await deps.userActive(trx, grant.user_uuid))) throw invalidGrant('The grant has ended');
      if (!(await repo.activateGrant(trx, grant.uuid))) throw invalidGrant('The grant has ended');
      const approval = fromDbJson<Omit<Acting, 'workspaceUuid'>>(grant.approval);
      await recordAudit(
        trx,
        { ...approval, workspaceUuid: grant.workspace_uuid },
        {
          action: 'mcp_grant.create',
          target: { type: 'mcp_grant', uuid: grant.uuid },
          details: { client_id: grant.client_id, client_name: grant.client_name, role: grant.role },
        },
      );
      return issue(trx, grant, client);
    });
  }

  async function refresh(client: ClientInfo, p: Record<string, string>, origin: RequestOrigin) {
    if (!p.refresh_token) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
    const row = await find(p.refresh_token, 'refresh');
    if (!row || row.client_id !== client.client_id) throw invalidGrant('Unknown refresh token');
    if (row.ended_at !== null) throw await reuse(row, client, origin, 'refresh_reuse');
    if (Date.parse(row.expires_at) <= now()) throw invalidGrant('The refresh token has expired');
    const grant = await repo.findGrant(db.kysely, row.grant_uuid);
    if (!grant || grant.revoked_at !== null || grant.active !== 1) throw invalidGrant('The grant has been revoked');
    if (!(await deps.userActive(db.kysely, grant.user_uuid))) throw invalidGrant('The grant has ended');
    if (!(await repo.endToken(db.kysely, row.hash, iso(now()))))
      throw await reuse(row, client, origin, 'refresh_reuse');
    return db.transaction((trx) => issue(trx, grant, client));
  }

  /**
   * `POST /oauth/token`.
   * @throws OAuthError 400 invalid_request, unsupported_grant_type, invalid_target, invalid_grant; 401 invalid_client.
   */
  async function token(headers: Headers, form: Form, origin: RequestOrigin) {
    const p = single(form);
    const client = await deps.clients.authenticate(headers, p);
    if (!p.grant_type) throw new OAuthError(400, 'invalid_request', 'grant_type is required');
    if (p.grant_type !== 'authorization_code' && p.grant_type !== 'refresh_token') {
      throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    }
    if (!grants.resourcesOk(form.resource))
      throw new OAuthError(400, 'invalid_target', `resource must be ${deps.resource}`);
    return p.grant_type === 'authorization_code' ? exchangeCode(client, p, origin) : refresh(client, p, origin);
  }

  /** `POST /oauth/revoke` (RFC 7009): answers nothing; another client's token stays valid. */
  async function revoke(headers: Headers, form: Form, origin: RequestOrigin): Promise<void> {
    const p = single(form);
    const client = await deps.clients.authenticate(headers, p);
    if (!p.token) throw new OAuthError(400, 'invalid_request', 'token is required');
    const kind = tokenKindOf(p.token);
    if (kind !== 'access' && kind !== 'refresh') return;
    const row = await find(p.token, kind);
    if (!row || row.client_id !== client.client_id) return;
    if (kind === 'access') {
      await repo.endToken(db.kysely, row.hash, iso(now()));
      const grant = await repo.findGrant(db.kysely, row.grant_uuid);
      if (grant) deps.credentialsChanged(grant.user_uuid);
      return;
    }
    const grant = await repo.findGrant(db.kysely, row.grant_uuid);
    if (grant) await db.transaction((trx) => grants.endGrant(trx, grant, 'client', clientActor(client, origin)));
  }

  return { token, revoke };
}

/**
 * The `/mcp` credential check of an access token: its grant when the token is live and was issued
 * for this server's MCP resource (RFC 8707 audience), else null. Records the grant's
 * `last_used_at` at most once a minute.
 */
export function createAccessLookup(deps: {
  db: Db;
  repo: Pick<McpOAuthRepo, 'findAccess' | 'touchGrant'>;
  clock: Clock;
  resource: string;
}) {
  return async function lookupAccess(value: string) {
    if (tokenKindOf(value) !== 'access') return null;
    const at = deps.clock.now();
    const found = await deps.repo.findAccess(deps.db.kysely, sha256Hex(value), iso(at));
    if (!found || found.resource !== deps.resource) return null;
    if (!found.last_used_at || at - Date.parse(found.last_used_at) >= TOUCH_INTERVAL_MS) {
      await deps.repo.touchGrant(deps.db.kysely, found.uuid, iso(at)).catch(() => undefined);
    }
    return {
      grantUuid: found.uuid,
      workspaceUuid: found.workspace_uuid,
      userUuid: found.user_uuid,
      role: found.role as Role,
    };
  };
}
