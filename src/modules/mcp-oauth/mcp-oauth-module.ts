import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Executor } from '../../db/connect.js';
import type { EventHub } from '../../lib/event-hub.js';
import { createOutboundDispatcher } from '../../lib/outbound.js';
import type { ProcessDeps } from '../../process-deps.js';
import { accountsRepo } from '../accounts/accounts-repo.js';
import { membershipsRepo } from '../accounts/memberships-repo.js';
import { createClients } from './mcp-oauth-clients.js';
import { mcpOAuthConsentRoutes } from './mcp-oauth-consent-routes.js';
import { mcpOAuthRepo } from './mcp-oauth-repo.js';
import { mcpOAuthRoutes } from './mcp-oauth-routes.js';
import { createMcpOAuthService } from './mcp-oauth-service.js';
import { createAccessLookup, createMcpOAuthTokens } from './mcp-oauth-tokens.js';

/** Is the MCP authorization server on (`TASKHOOK_MCP` and `TASKHOOK_MCP_OAUTH`)? */
const enabled = (config: Config) => config.mcp && config.mcpOauth;

/** `{base_url}` (the issuer) and `{base_url}/mcp` (the one protected resource). */
export function mcpOAuthIdentifiers(config: Config) {
  const issuer = config.publicUrl.replace(/\/+$/, '');
  return { issuer, resource: `${issuer}/mcp`, resourceMetadata: `${issuer}/.well-known/oauth-protected-resource/mcp` };
}

/**
 * The `/mcp` credential check of OAuth access tokens, handed to the accounts room's authenticator
 * by app.ts; undefined while the authorization server is off (such tokens are then unknown).
 */
export function createMcpAccessTokens(config: Config, runtime: ProcessDeps) {
  if (!enabled(config)) return undefined;
  const { resource } = mcpOAuthIdentifiers(config);
  return createAccessLookup({ db: runtime.db, repo: mcpOAuthRepo, clock: runtime.clock, resource });
}

/**
 * taskhook as the OAuth authorization server of its own MCP endpoint (docs/mcp.md, "Connecting
 * with OAuth"): metadata, authorization with consent, tokens, registration, revocation, grants.
 */
export function createMcpOAuthModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  workspaceNames(ex: Executor, uuids: string[]): Promise<Map<string, string>>;
  credentialsChanged(userUuid: string): void;
  events: Pick<EventHub, 'on'>;
}) {
  const { config, runtime } = deps;
  const { issuer, resource } = mcpOAuthIdentifiers(config);
  const policy = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  const clients = createClients({
    db: runtime.db,
    repo: mcpOAuthRepo,
    clock: runtime.clock,
    policy,
    dispatcher: createOutboundDispatcher({ ...policy, timeoutMs: 5000 }),
  });
  const base = {
    db: runtime.db,
    repo: mcpOAuthRepo,
    clients,
    clock: runtime.clock,
    issuer,
    resource,
    codeTtlMs: config.mcpOauthCodeTtlSeconds * 1000,
    roleOf: membershipsRepo.roleOf,
    workspaceNames: deps.workspaceNames,
    credentialsChanged: deps.credentialsChanged,
  };
  const service = createMcpOAuthService(base);
  // Grants follow the member: leaving or being removed ends the user's grants there, in the same
  // transaction (also while the server is off: a grant made before must not outlive the member).
  deps.events.on('member:removed', ({ trx, acting, userUuid }) =>
    service.endGrantsOfMember(trx, acting, acting.workspaceUuid, userUuid),
  );
  const tokens = createMcpOAuthTokens(
    {
      ...base,
      accessTtlMs: config.mcpOauthAccessTtlSeconds * 1000,
      refreshTtlMs: config.mcpOauthRefreshTtlSeconds * 1000,
      userActive: async (ex: Executor, userUuid: string) => {
        const user = await accountsRepo.findUserByUuid(ex, userUuid);
        return user !== undefined && !user.disabled;
      },
    },
    service,
  );
  return {
    service,
    async routes(app: FastifyInstance) {
      if (!enabled(config)) return;
      const url = new URL(issuer);
      const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
      if (url.protocol !== 'https:' && !loopback) {
        runtime.logger.warn(
          { publicUrl: issuer },
          'TASKHOOK_PUBLIC_URL is neither https nor loopback: MCP clients will refuse its OAuth endpoints',
        );
      }
      await app.register(mcpOAuthRoutes({ service, tokens, clients, issuer, resource, dcr: config.mcpOauthDcr }));
      await app.register(mcpOAuthConsentRoutes(service));
    },
  };
}
