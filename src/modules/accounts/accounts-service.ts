import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError, AUTH_MESSAGES, AuthError, invalid, notFound } from '../../http/errors.js';
import { type SecretBox, sha256Hex } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { PasswordHasher } from '../../lib/passwords.js';
import { type Clock, iso } from '../../lib/time.js';
import {
  ACCOUNT_DISABLED,
  generateIngestToken,
  generatePlatformKey,
  ingestTokenPrefix,
  newSigningSecret,
  normalizeEmail,
  platformKeyPrefix,
  requirePassword,
} from './accounts-fns.js';
import type { RecoveryRepo } from './accounts-recovery-repo.js';
import { createRecoveryService } from './accounts-recovery-service.js';
import type { AccountsRepo, CredentialRow, CredentialTable, UserRow } from './accounts-repo.js';
import type { SessionTokens } from './accounts-tokens.js';
import type { Mailer } from './mailer.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface AccountsDeps {
  db: Db;
  repo: AccountsRepo;
  tokens: SessionTokens;
  mailer: Mailer;
  box: SecretBox;
  clock: Clock;
  publicUrl: string;
  /** Bounded argon2 hashing, shared by every use in the process. */
  passwords: Pick<PasswordHasher, 'hash' | 'check'>;
  /** Pending registrations, verification and reset links. */
  links: RecoveryRepo;
  /** How long an unverified registration lives (TASKHOOK_UNVERIFIED_TTL_HOURS). */
  unverifiedTtlMs: number;
  /** Called after a commit that may void the user's credentials (this instance's cache). */
  onCredentialsChanged?: (userUuid: string) => void;
}

export interface PublicUser {
  uuid: string;
  email: string;
}

const credentialView = (row: CredentialRow) => ({
  uuid: row.uuid,
  prefix: row.prefix,
  created_at: row.createdAt,
  last_used_at: row.lastUsedAt,
  revoked_at: row.revokedAt,
});

/** Registration, login, passwords, platform keys, ingest tokens and signing secrets. */
export function createAccountsService(deps: AccountsDeps) {
  const { db, repo, clock } = deps;
  const now = () => iso(clock.now());
  const changed = (userUuid: string) => deps.onCredentialsChanged?.(userUuid);

  /**
   * Creates a user with its signing secret. `password: null` makes an account without a password
   * (OAuth sign-ups); `link` runs in the same transaction, so the user exists only with it.
   * @throws AppError INVALID_REQUEST for a short password or a registered e-mail.
   */
  async function createUser(input: {
    email: string;
    password: string | null;
    verified: boolean;
    agentsEnabled: boolean;
    link?: (trx: Executor, user: UserRow) => Promise<unknown>;
  }): Promise<UserRow> {
    if (input.password !== null) requirePassword('password', input.password);
    const user: UserRow = {
      uuid: newId(),
      email: normalizeEmail(input.email),
      passwordHash: input.password === null ? null : await deps.passwords.hash(input.password),
      emailVerified: input.verified,
      agentsEnabled: input.agentsEnabled,
      tokenVersion: 0,
      createdAt: now(),
      disabled: false,
    };
    const sealed = deps.box.seal(newSigningSecret());
    try {
      await db.transaction(async (trx) => {
        await repo.insertUser(trx, user);
        await repo.insertSigningSecret(trx, { uuid: newId(), userUuid: user.uuid, sealed, createdAt: user.createdAt });
        await input.link?.(trx, user);
      });
    } catch (err) {
      if (err instanceof UniqueViolationError) {
        throw invalid('email', 'is already registered', 'An account with this e-mail already exists');
      }
      throw err;
    }
    return user;
  }

  async function userByEmail(email: string): Promise<UserRow> {
    const user = await repo.findUserByEmail(db.kysely, normalizeEmail(email));
    if (!user) throw notFound('User');
    return user;
  }

  async function issueCredential(table: CredentialTable, userUuid: string, name?: string) {
    const secret = table === 'platform_keys' ? generatePlatformKey() : generateIngestToken();
    const row = {
      uuid: newId(),
      userUuid,
      name,
      hash: sha256Hex(secret),
      prefix: table === 'platform_keys' ? platformKeyPrefix(secret) : ingestTokenPrefix(secret),
      createdAt: now(),
    };
    await db.transaction((trx) => repo.insertCredential(trx, table, row));
    return { uuid: row.uuid, secret, created_at: row.createdAt };
  }

  async function revoke(table: CredentialTable, userUuid: string, uuid: string, what: string) {
    const ok = await db.transaction((trx) => repo.revokeCredential(trx, table, userUuid, uuid, now()));
    if (!ok) throw notFound(what);
    changed(userUuid);
  }

  async function signingSecrets(userUuid: string) {
    const rows = await repo.listSigningSecrets(db.kysely, userUuid, now());
    return rows.map((r) => ({ secret: deps.box.open(r.secret_sealed), created_at: r.created_at, uuid: r.uuid }));
  }

  /** A session token for the user, answered exactly as a password login answers. */
  async function session(user: UserRow): Promise<{ token: string; user: PublicUser }> {
    const token = await deps.tokens.issue({ userUuid: user.uuid, tokenVersion: user.tokenVersion });
    return { token, user: { uuid: user.uuid, email: user.email } };
  }

  return {
    createUser,
    session,
    ...createRecoveryService(deps),

    /** @throws AuthError 401 on wrong credentials, 403 when the account is disabled or its e-mail not verified. */
    async login(email: string, password: string): Promise<{ token: string; user: PublicUser }> {
      const user = await repo.findUserByEmail(db.kysely, normalizeEmail(email));
      // An account without a password spends the same time as a wrong one and fails the same way.
      const ok = await deps.passwords.check(user?.passwordHash ?? undefined, password);
      if (!user || !ok) throw new AuthError(401, AUTH_MESSAGES.badLogin);
      if (user.disabled) throw new AuthError(403, ACCOUNT_DISABLED);
      if (!user.emailVerified) throw new AuthError(403, AUTH_MESSAGES.unverified);
      return session(user);
    },

    /**
     * Sets a new password and voids every session token issued before. `current` may be left out
     * only while the account has none (OAuth sign-ups); given for such an account, it is wrong.
     * @throws AppError INVALID_REQUEST for a missing or wrong current password or a short new one.
     */
    async changePassword(userUuid: string, current: string | undefined, next: string): Promise<void> {
      const user = await repo.findUserByUuid(db.kysely, userUuid);
      if (!user) throw new AuthError(401, AUTH_MESSAGES.invalid);
      if (current === undefined && user.passwordHash !== null) {
        throw invalid('current_password', 'is required', 'Invalid request: current_password is required');
      }
      if (current !== undefined && !(await deps.passwords.check(user.passwordHash ?? undefined, current))) {
        throw invalid('current_password', 'is incorrect', 'The current password is incorrect');
      }
      requirePassword('new_password', next);
      const passwordHash = await deps.passwords.hash(next);
      await db.transaction((trx) => repo.updateUser(trx, userUuid, { passwordHash, bumpTokenVersion: true }, now()));
      changed(userUuid);
    },

    async setPasswordByEmail(email: string, password: string): Promise<PublicUser> {
      requirePassword('password', password);
      const user = await userByEmail(email);
      const passwordHash = await deps.passwords.hash(password);
      await db.transaction((trx) => repo.updateUser(trx, user.uuid, { passwordHash, bumpTokenVersion: true }, now()));
      changed(user.uuid);
      return { uuid: user.uuid, email: user.email };
    },

    async verifyByEmail(email: string): Promise<PublicUser> {
      const user = await userByEmail(email);
      await db.transaction((trx) => repo.updateUser(trx, user.uuid, { emailVerified: true }, now()));
      changed(user.uuid);
      return { uuid: user.uuid, email: user.email };
    },

    async createPlatformKey(userUuid: string, name: string) {
      const { uuid, secret, created_at } = await issueCredential('platform_keys', userUuid, name);
      return { uuid, name, key: secret, created_at };
    },

    async createPlatformKeyByEmail(email: string, name: string) {
      const user = await userByEmail(email);
      const { uuid, secret } = await issueCredential('platform_keys', user.uuid, name);
      return { uuid, name, key: secret };
    },

    async listPlatformKeys(userUuid: string) {
      const rows = await repo.listCredentials(db.kysely, 'platform_keys', userUuid);
      return rows.map((r) => ({ ...credentialView(r), name: r.name ?? '' }));
    },

    revokePlatformKey: (userUuid: string, uuid: string) => revoke('platform_keys', userUuid, uuid, 'Platform key'),

    async createIngestToken(userUuid: string) {
      const { uuid, secret, created_at } = await issueCredential('ingest_tokens', userUuid);
      return { uuid, token: secret, created_at };
    },

    async listIngestTokens(userUuid: string) {
      return (await repo.listCredentials(db.kysely, 'ingest_tokens', userUuid)).map(credentialView);
    },

    revokeIngestToken: (userUuid: string, uuid: string) => revoke('ingest_tokens', userUuid, uuid, 'Ingest token'),

    /** The current callback signing secret. */
    async getSigningSecret(userUuid: string): Promise<{ secret: string; created_at: string }> {
      const [current] = await signingSecrets(userUuid);
      if (!current) throw new AppError('INTERNAL_ERROR', 'Account has no signing secret');
      return { secret: current.secret, created_at: current.created_at };
    },

    /** Every secret that signs callbacks now: the current one, plus the previous one for 24 h after a rotation. */
    activeSigningSecrets: (userUuid: string) => signingSecrets(userUuid).then((rows) => rows.map((r) => r.secret)),

    async rotateSigningSecret(userUuid: string): Promise<{ secret: string; created_at: string }> {
      const secret = newSigningSecret();
      const createdAt = now();
      await db.transaction(async (trx) => {
        await repo.expireCurrentSigningSecrets(trx, userUuid, iso(clock.now() + DAY_MS));
        await repo.insertSigningSecret(trx, { uuid: newId(), userUuid, sealed: deps.box.seal(secret), createdAt });
      });
      return { secret, created_at: createdAt };
    },
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
