import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AUTH_MESSAGES, AuthError, invalid, notFound } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { PasswordHasher } from '../../lib/passwords.js';
import { type Clock, iso } from '../../lib/time.js';
import { ACCOUNT_DISABLED, newSigningSecret, normalizeEmail, requirePassword } from './accounts-fns.js';
import type { RecoveryRepo } from './accounts-recovery-repo.js';
import { createRecoveryService } from './accounts-recovery-service.js';
import type { AccountsRepo, UserRow } from './accounts-repo.js';
import type { SessionTokens } from './accounts-tokens.js';
import { createCredentialsService } from './credentials-service.js';
import type { Mailer } from './mailer.js';
import { membershipsRepo } from './memberships-repo.js';

const _DAY_MS = 24 * 60 * 60 * 1000;

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

/** Registration, login and passwords; with the credentials service, keys, tokens and signing secrets. */
export function createAccountsService(deps: AccountsDeps) {
  const { db, repo, clock } = deps;
  const now = () => iso(clock.now());
  const changed = (userUuid: string) => deps.onCredentialsChanged?.(userUuid);

  /**
   * Creates a user with its personal workspace and that workspace's signing secret. `password: null` makes an account without a password
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
        await membershipsRepo.insertPersonal(trx, user.uuid, user.createdAt);
        await repo.insertSigningSecret(trx, {
          uuid: newId(),
          workspaceUuid: user.uuid,
          sealed,
          createdAt: user.createdAt,
        });
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

    ...createCredentialsService({ ...deps, userByEmail }),
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
