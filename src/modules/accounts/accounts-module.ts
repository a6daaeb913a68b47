import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { AppError, AuthError } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { type CredentialCheck, roleAtLeast } from '../../lib/principal.js';
import type { ProcessDeps } from '../../process-deps.js';
import { createAuthenticator, createWorkspaceResolver, type McpTokenLookup } from './accounts-auth.js';
import { recoveryRepo } from './accounts-recovery-repo.js';
import { recoveryRoutes } from './accounts-recovery-routes.js';
import { accountsRepo } from './accounts-repo.js';
import { accountsRoutes } from './accounts-routes.js';
import { createAccountsService } from './accounts-service.js';
import { createSessionTokens } from './accounts-tokens.js';
import { createCredentialCache } from './credential-cache.js';
import { credentialChanges } from './credential-changes.js';
import { createMailer } from './mailer.js';
import { membershipsRepo } from './memberships-repo.js';

/**
 * Wires the accounts capability: its service, the request authenticator and its routes. The
 * credential cache serves once the app listens for its `changeFeed` (a serving app), not for the
 * CLI, which only uses the service.
 */
export function createAccountsModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  box: SecretBox;
  /** MCP OAuth access tokens, handed in by app.ts from the MCP authorization server (absent: refused). */
  mcpTokens?: McpTokenLookup;
}) {
  const { config, runtime } = deps;
  const tokens = createSessionTokens(runtime.secrets.jwtSecret, () => runtime.clock.now());
  const cache = createCredentialCache({ ttlMs: config.credentialCacheMs, now: () => runtime.clock.now() });
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.smtpFrom, log: runtime.logger });
  const service = createAccountsService({
    db: runtime.db,
    repo: accountsRepo,
    links: recoveryRepo,
    unverifiedTtlMs: config.unverifiedTtlHours * 3_600_000,
    tokens,
    box: deps.box,
    clock: runtime.clock,
    publicUrl: config.publicUrl,
    passwords: runtime.passwords,
    mailer,
    onCredentialsChanged: (userUuid) => cache.invalidate(userUuid),
  });
  const authenticate = createAuthenticator({
    db: runtime.db,
    repo: accountsRepo,
    tokens,
    clock: runtime.clock,
    log: runtime.logger,
    cache,
    mcpTokens: deps.mcpTokens,
    roleOf: membershipsRepo.roleOf,
  });
  const resolveWorkspace = createWorkspaceResolver({ db: runtime.db, roleOf: membershipsRepo.roleOf });
  const credentials: CredentialCheck = {
    async stillValid(headers, was, needed = 'viewer') {
      try {
        // `mcp` takes every credential `user` does, and OAuth access tokens (accepted only on /mcp).
        const now = await resolveWorkspace(await authenticate(headers, 'mcp'), was.workspaceUuid);
        // A password change (a new token version) ends sessions only: keys are not affected by it.
        const sameSession = was.via !== 'jwt' || now.tokenVersion === was.tokenVersion;
        return now.userUuid === was.userUuid && sameSession && now.agentsEnabled && roleAtLeast(now.role, needed);
      } catch (err) {
        // The credential no longer works, or no longer reaches the workspace (404).
        if (err instanceof AuthError || err instanceof AppError) return false;
        throw err;
      }
    },
    onChange: (listener) => cache.onInvalidate(listener),
  };
  return {
    service,
    authenticate,
    resolveWorkspace,
    credentials,
    /** Mail to users (the workspaces room sends invitations through it). */
    mailer,
    /** Drops this instance's cached credentials of a user, after a commit that changed their access. */
    credentialsChanged: (userUuid: string) => cache.invalidate(userUuid),
    async routes(app: FastifyInstance) {
      await accountsRoutes(service)(app);
      await recoveryRoutes(service)(app);
    },
    /** What the app listens for to let the credential cache serve (null: no cache). */
    changeFeed: config.credentialCacheMs > 0 ? { channel: credentialChanges, cache } : null,
  };
}
