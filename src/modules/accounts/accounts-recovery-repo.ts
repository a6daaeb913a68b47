// SQL of account recovery: pending registrations, verification and password-reset links, and
// deleting a user with everything they own.
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { lockRows } from '../../db/transactions.js';
import { announceCredentialChange } from './credential-changes.js';
import { membershipsRepo } from './memberships-repo.js';

export type LinkTable = 'email_verifications' | 'password_resets';

/** Tables keyed by user without a foreign key to `users` (the rest go with the user by cascade). */
/** Rows of a workspace that its deletion does not cascade to. */

export const recoveryRepo = {
  /** The user with this (normalised) e-mail, locked until the transaction ends (PostgreSQL). */
  async lockUserByEmail(ex: Executor, email: string): Promise<{ uuid: string; verified: boolean } | undefined> {
    const row = await withDbErrors(
      lockRows(
        ex,
        ex.selectFrom('users').select(['uuid', 'email_verified']).where('email', '=', email),
      ).executeTakeFirst(),
    );
    return row && { uuid: row.uuid, verified: Boolean(row.email_verified) };
  },

  insertLink(
    ex: Executor,
    table: LinkTable,
    row: { tokenHash: string; userUuid: string; expiresAt: string; createdAt: string },
  ) {
    return withDbErrors(
      ex
        .insertInto(table)
        .values({
          token_hash: row.tokenHash,
          user_uuid: row.userUuid,
          expires_at: row.expiresAt,
          created_at: row.createdAt,
        })
        .execute(),
    );
  },

  /** Deletes the link and returns its user when it exists and has not expired. */
  async consumeLink(ex: Executor, table: LinkTable, tokenHash: string, now: string): Promise<string | undefined> {
    const row = await withDbErrors(
      ex
        .deleteFrom(table)
        .where('token_hash', '=', tokenHash)
        .returning(['user_uuid', 'expires_at'])
        .executeTakeFirst(),
    );
    return row && row.expires_at > now ? row.user_uuid : undefined;
  },

  /** Every link of the user stops working. */
  deleteLinks(ex: Executor, table: LinkTable, userUuid: string) {
    return withDbErrors(ex.deleteFrom(table).where('user_uuid', '=', userUuid).execute());
  },

  /** When the user's newest link was made (to send at most one mail a minute). */
  async newestLinkAt(ex: Executor, table: LinkTable, userUuid: string): Promise<string | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom(table)
        .select('created_at')
        .where('user_uuid', '=', userUuid)
        .orderBy('created_at', 'desc')
        .limit(1)
        .executeTakeFirst(),
    );
    return row?.created_at;
  },

  /** Deletes up to `limit` unverified accounts last registered before `before`; returns how many. */
  async deleteExpiredRegistrations(ex: Executor, before: string, limit: number): Promise<number> {
    const rows = await withDbErrors(
      ex
        .selectFrom('users')
        .select('uuid')
        .where('email_verified', '=', 0)
        .where('updated_at', '<', before)
        .limit(limit)
        .execute(),
    );
    // Marked deleted as of the cutoff: only the order of the purge reads it.
    for (const { uuid } of rows) await recoveryRepo.deleteUser(ex, uuid, before);
    return rows.length;
  },

  /**
   * Deletes the user, their memberships and the keys they made; marks their personal workspace
   * (whose uuid is theirs) deleted at `at`, so that the background purge removes everything in it
   * by the same rule as any deleted workspace. Announces it so their credentials stop at once.
   */
  async deleteUser(ex: Executor, uuid: string, at: string): Promise<void> {
    await membershipsRepo.markPersonalDeleted(ex, uuid, at);
    await withDbErrors(ex.deleteFrom('users').where('uuid', '=', uuid).execute());
    await announceCredentialChange(ex, uuid);
  },
};

export type RecoveryRepo = typeof recoveryRepo;
