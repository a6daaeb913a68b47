// Account recovery and unverified accounts: an address belongs to whoever proves they own its
// mailbox, not to whoever typed it first (docs/security.md, "Accounts").
import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import { randomSecret, type SecretBox, sha256Hex } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { PasswordHasher } from '../../lib/passwords.js';
import { type Clock, iso } from '../../lib/time.js';
import { newSigningSecret, normalizeEmail, requirePassword } from './accounts-fns.js';
import type { LinkTable, RecoveryRepo } from './accounts-recovery-repo.js';
import type { AccountsRepo } from './accounts-repo.js';
import type { Mailer } from './mailer.js';
import { membershipsRepo } from './memberships-repo.js';

const MINUTE_MS = 60_000;
const RESET_TTL_MS = 60 * MINUTE_MS;
/** Expired registrations deleted by one registration: their number stays bounded by sign-ups. */
const EXPIRED_PER_REGISTRATION = 100;

export interface RecoveryDeps {
  db: Db;
  repo: Pick<AccountsRepo, 'insertUser' | 'insertSigningSecret' | 'updateUser' | 'findUserByEmail'>;
  links: RecoveryRepo;
  mailer: Mailer;
  box: SecretBox;
  clock: Clock;
  publicUrl: string;
  passwords: Pick<PasswordHasher, 'hash'>;
  unverifiedTtlMs: number;
  onCredentialsChanged?: (userUuid: string) => void;
}

/** Registration, verification, resend, password reset, and the operator's disable/enable/delete. */
export function createRecoveryService(deps: RecoveryDeps) {
  const { db, repo, links, clock } = deps;
  const now = () => iso(clock.now());
  const changed = (userUuid: string) => deps.onCredentialsChanged?.(userUuid);

  /** A new single-use link of `table` for the user; returns the token (only its hash is stored). */
  async function newLink(trx: Executor, table: LinkTable, userUuid: string, ttlMs: number): Promise<string> {
    const token = randomSecret(32);
    const expiresAt = iso(clock.now() + ttlMs);
    await links.insertLink(trx, table, { tokenHash: sha256Hex(token), userUuid, expiresAt, createdAt: now() });
    return token;
  }

  /** False when a link of `table` went to the user less than a minute ago (one mail a minute). */
  async function mayMail(trx: Executor, table: LinkTable, userUuid: string): Promise<boolean> {
    const last = await links.newestLinkAt(trx, table, userUuid);
    return !last || clock.now() - Date.parse(last) >= MINUTE_MS;
  }

  const verificationUrl = (token: string) => `${deps.publicUrl}/auth/verify_email?token=${token}`;

  /** The user by e-mail, for the operator's commands. @throws AppError NOT_FOUND */
  async function userByEmail(email: string) {
    const user = await repo.findUserByEmail(db.kysely, normalizeEmail(email));
    if (!user) throw notFound('User');
    return user;
  }

  /** The user's row changes and their credentials are re-checked everywhere. */
  async function update(userUuid: string, changes: Parameters<RecoveryDeps['repo']['updateUser']>[2]) {
    await db.transaction((trx) => repo.updateUser(trx, userUuid, changes, now()));
    changed(userUuid);
  }

  return {
    /**
     * Self-service sign-up. The e-mail of an unverified account replaces that registration (same
     * uuid, new password, earlier links void); the user, the signing secret and the link are written
     * in one transaction and the mail goes out after the commit.
     * @throws AppError INVALID_REQUEST for a short password or an e-mail a verified account holds.
     */
    async register(input: { email: string; password: string }) {
      requirePassword('password', input.password);
      const email = normalizeEmail(input.email);
      const passwordHash = await deps.passwords.hash(input.password);
      const registered = async (trx: Executor) => {
        await links.deleteExpiredRegistrations(trx, iso(clock.now() - deps.unverifiedTtlMs), EXPIRED_PER_REGISTRATION);
        const existing = await links.lockUserByEmail(trx, email);
        if (existing?.verified) {
          throw invalid('email', 'is already registered', 'An account with this e-mail already exists');
        }
        let uuid = existing?.uuid;
        if (uuid) {
          await repo.updateUser(trx, uuid, { passwordHash, bumpTokenVersion: true }, now());
          await links.deleteLinks(trx, 'email_verifications', uuid);
        } else {
          uuid = newId();
          const user = { uuid, email, passwordHash, emailVerified: false, agentsEnabled: true, tokenVersion: 0 };
          await repo.insertUser(trx, { ...user, createdAt: now(), disabled: false });
          const sealed = deps.box.seal(newSigningSecret());
          await membershipsRepo.insertPersonal(trx, uuid, now());
          await repo.insertSigningSecret(trx, { uuid: newId(), workspaceUuid: uuid, sealed, createdAt: now() });
        }
        return { uuid, token: await newLink(trx, 'email_verifications', uuid, deps.unverifiedTtlMs) };
      };
      let done: { uuid: string; token: string };
      try {
        done = await db.transaction(registered);
      } catch (err) {
        if (!(err instanceof UniqueViolationError)) throw err;
        throw invalid('email', 'is already registered', 'An account with this e-mail already exists');
      }
      await deps.mailer.sendVerification(email, verificationUrl(done.token));
      return { uuid: done.uuid, email, email_verified: false as const };
    },

    /** @throws AppError INVALID_REQUEST when the token is unknown, used or expired. */
    async verifyEmail(token: string): Promise<void> {
      const userUuid = await db.transaction(async (trx) => {
        const found = await links.consumeLink(trx, 'email_verifications', sha256Hex(token), now());
        if (found) await repo.updateUser(trx, found, { emailVerified: true }, now());
        return found;
      });
      if (userUuid) changed(userUuid);
      else throw invalid('token', 'is invalid or expired', 'The verification link is invalid or has expired');
    },

    /** A new verification link for an unverified account (at most one a minute); silent otherwise. */
    async resendVerification(email: string): Promise<void> {
      const user = await repo.findUserByEmail(db.kysely, normalizeEmail(email));
      if (!user || user.emailVerified || user.disabled) return;
      const token = await db.transaction(async (trx) =>
        (await mayMail(trx, 'email_verifications', user.uuid))
          ? newLink(trx, 'email_verifications', user.uuid, deps.unverifiedTtlMs)
          : null,
      );
      if (token) await deps.mailer.sendVerification(user.email, verificationUrl(token));
    },

    /** A reset link for a verified account (valid 1 hour, at most one a minute); silent otherwise. */
    async requestPasswordReset(email: string): Promise<void> {
      const user = await repo.findUserByEmail(db.kysely, normalizeEmail(email));
      if (!user?.emailVerified || user.disabled) return;
      const token = await db.transaction(async (trx) =>
        (await mayMail(trx, 'password_resets', user.uuid))
          ? newLink(trx, 'password_resets', user.uuid, RESET_TTL_MS)
          : null,
      );
      if (token)
        await deps.mailer.sendPasswordReset(user.email, `${deps.publicUrl}/dashboard/reset-password?token=${token}`);
    },

    /**
     * Sets the password of the reset link's account and ends its earlier sessions (keys and ingest
     * tokens are not affected); the link and any other reset link of the account stop working.
     * @throws AppError INVALID_REQUEST (`token`) for an unknown, used or expired link; (`new_password`) too short.
     */
    async resetPassword(token: string, newPassword: string): Promise<void> {
      requirePassword('new_password', newPassword);
      const passwordHash = await deps.passwords.hash(newPassword);
      const userUuid = await db.transaction(async (trx) => {
        const found = await links.consumeLink(trx, 'password_resets', sha256Hex(token), now());
        if (!found) return undefined;
        await links.deleteLinks(trx, 'password_resets', found);
        await repo.updateUser(trx, found, { passwordHash, bumpTokenVersion: true }, now());
        return found;
      });
      if (!userUuid)
        throw invalid('token', 'is invalid, used or expired', 'The reset link is invalid, used or expired');
      changed(userUuid);
    },

    /**
     * An identity provider proved the mailbox of an unverified account (OAuth login): the pending
     * registration's password is cleared, its links stop working and the account becomes verified.
     * Runs in the caller's transaction.
     */
    async claimPendingAccount(trx: Executor, userUuid: string): Promise<void> {
      await links.deleteLinks(trx, 'email_verifications', userUuid);
      await links.deleteLinks(trx, 'password_resets', userUuid);
      await repo.updateUser(trx, userUuid, { passwordHash: null, emailVerified: true, bumpTokenVersion: true }, now());
    },

    async disableByEmail(email: string) {
      const user = await userByEmail(email);
      await update(user.uuid, { disabledAt: now() });
      return { uuid: user.uuid, email: user.email, disabled: true };
    },

    async enableByEmail(email: string) {
      const user = await userByEmail(email);
      await update(user.uuid, { disabledAt: null });
      return { uuid: user.uuid, email: user.email, disabled: false };
    },

    /**
     * Deletes the user, their personal workspace with everything in it, and their memberships.
     * @throws AppError LAST_OWNER when they are the only owner of a team workspace that has other
     * members (someone else must be made owner first, or the workspace deleted).
     */
    async deleteByEmail(email: string) {
      const user = await userByEmail(email);
      await db.transaction(async (trx) => {
        const stranded = await membershipsRepo.soleOwnerOfShared(trx, user.uuid);
        if (stranded.length > 0) {
          throw new AppError(
            'LAST_OWNER',
            `${user.email} is the only owner of workspace ${stranded.join(', ')}: make another member owner first`,
          );
        }
        await membershipsRepo.deleteSoloWorkspaces(trx, user.uuid, now());
        await links.deleteUser(trx, user.uuid, now());
      });
      changed(user.uuid);
      return { uuid: user.uuid, email: user.email, deleted: true };
    },
  };
}
