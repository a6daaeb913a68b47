import type { Config } from '../../config.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { Runtime } from '../../runtime.js';
import { createAuthenticator } from './accounts-auth.js';
import { accountsRepo } from './accounts-repo.js';
import { accountsRoutes } from './accounts-routes.js';
import { createAccountsService } from './accounts-service.js';
import { createSessionTokens } from './accounts-tokens.js';
import { createMailer } from './mailer.js';

/** Wires the accounts capability: its service, the request authenticator and its routes. */
export function createAccountsModule(deps: { config: Config; runtime: Runtime; box: SecretBox }) {
  const { config, runtime } = deps;
  const tokens = createSessionTokens(runtime.secrets.jwtSecret, () => runtime.clock.now());
  const service = createAccountsService({
    db: runtime.db,
    repo: accountsRepo,
    tokens,
    box: deps.box,
    clock: runtime.clock,
    publicUrl: config.publicUrl,
    mailer: createMailer({ smtpUrl: config.smtpUrl, from: config.smtpFrom, log: runtime.logger }),
  });
  const authenticate = createAuthenticator({
    db: runtime.db,
    repo: accountsRepo,
    tokens,
    clock: runtime.clock,
    log: runtime.logger,
  });
  return { service, authenticate, routes: accountsRoutes(service) };
}
