import { credentialsRepo } from './credentials-repo.js';
import { signingSecretsRepo } from './signing-secrets-repo.js';
import { usersRepo } from './users-repo.js';

export {
  type CredentialRow,
  type CredentialTable,
  type CredentialWithUser,
  MAX_CREDENTIALS_LISTED,
} from './credentials-repo.js';
export type { UserRow } from './users-repo.js';

/** The only code that touches the accounts tables: users, credentials and signing secrets. */
export const accountsRepo = { ...usersRepo, ...credentialsRepo, ...signingSecretsRepo };

export type AccountsRepo = typeof accountsRepo;
