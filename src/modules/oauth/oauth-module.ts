import type { Config } from '../../config.js';
import type { ProcessDeps } from '../../process-deps.js';
import { accountsRepo } from '../accounts/accounts-repo.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import { createGithubClient } from './oauth-github.js';
import { createGoogleClient } from './oauth-google.js';
import { createProviderDispatcher } from './oauth-http.js';
import { oauthRepo } from './oauth-repo.js';
import { oauthRoutes } from './oauth-routes.js';
import { createOAuthService } from './oauth-service.js';

/** Wires OAuth login: a client per configured provider, the service and its routes. */
export function createOAuthModule(deps: {
  config: Pick<Config, 'oauth' | 'publicUrl'>;
  runtime: Pick<ProcessDeps, 'db' | 'clock'>;
  accounts: Pick<AccountsService, 'createUser' | 'session' | 'claimPendingAccount'>;
}) {
  const { oauth } = deps.config;
  const dispatcher = createProviderDispatcher();
  const service = createOAuthService({
    db: deps.runtime.db,
    repo: oauthRepo,
    users: accountsRepo,
    accounts: deps.accounts,
    clients: {
      google: oauth.google && createGoogleClient({ ...oauth.google, dispatcher, clock: deps.runtime.clock }),
      github: oauth.github && createGithubClient({ ...oauth.github, dispatcher }),
    },
    clock: deps.runtime.clock,
    publicUrl: deps.config.publicUrl,
    redirectUrl: oauth.redirectUrl,
    stateTtlSeconds: oauth.stateTtlSeconds,
  });
  return { service, routes: oauthRoutes(service), close: () => dispatcher.close() };
}
