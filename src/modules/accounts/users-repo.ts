import type { Selectable } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { UsersTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { prepareQuery } from '../../db/prepared.js';
import { announceCredentialChange } from './credential-changes.js';

/** What `password_hash` holds for an account without a password (OAuth sign-ups): no hash matches it. */
const NO_PASSWORD = '';

export interface UserRow {
  uuid: string;
  email: string;
  /** null: the account has no password yet (created by an OAuth login). */
  passwordHash: string | null;
  emailVerified: boolean;
  agentsEnabled: boolean;
  tokenVersion: number;
  createdAt: string;
  /** Disabled by the operator: no login, and every credential of the user is refused. */
  disabled: boolean;
}

/** A stored user as the service sees it. */
export function toUser(row: Selectable<UsersTable>): UserRow {
  return {
    uuid: row.uuid,
    email: row.email,
    passwordHash: row.password_hash === NO_PASSWORD ? null : row.password_hash,
    emailVerified: Boolean(row.email_verified),
    agentsEnabled: Boolean(row.agents_enabled),
    tokenVersion: row.token_version,
    createdAt: row.created_at,
    disabled: row.disabled_at !== null && row.disabled_at !== undefined,
  };
}

// On the path of every session request, built once (see prepareQuery).
const userByUuid = prepareQuery(1, (ex, uuid: string) => ex.selectFrom('users').selectAll().where('uuid', '=', uuid));

/** Users and their e-mail verification links. */
export const usersRepo = {
  insertUser(ex: Executor, user: UserRow): Promise<unknown> {
    return withDbErrors(
      ex
        .insertInto('users')
        .values({
          uuid: user.uuid,
          email: user.email,
          password_hash: user.passwordHash ?? NO_PASSWORD,
          email_verified: user.emailVerified ? 1 : 0,
          agents_enabled: user.agentsEnabled ? 1 : 0,
          token_version: user.tokenVersion,
          created_at: user.createdAt,
          updated_at: user.createdAt,
        })
        .execute(),
    );
  },

  async findUserByEmail(ex: Executor, email: string): Promise<UserRow | undefined> {
    const row = await withDbErrors(ex.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst());
    return row && toUser(row);
  },

  async findUserByUuid(ex: Executor, uuid: string): Promise<UserRow | undefined> {
    const [row] = await withDbErrors(userByUuid(ex, uuid));
    return row && toUser(row);
  },

  async updateUser(
    ex: Executor,
    uuid: string,
    changes: {
      emailVerified?: boolean;
      agentsEnabled?: boolean;
      /** null clears the password (no password then matches). */
      passwordHash?: string | null;
      bumpTokenVersion?: boolean;
      /** A time disables the account, null enables it. */
      disabledAt?: string | null;
    },
    now: string,
  ): Promise<boolean> {
    const result = await withDbErrors(
      ex
        .updateTable('users')
        .set((eb) => ({
          updated_at: now,
          ...(changes.emailVerified !== undefined && { email_verified: changes.emailVerified ? 1 : 0 }),
          ...(changes.agentsEnabled !== undefined && { agents_enabled: changes.agentsEnabled ? 1 : 0 }),
          ...(changes.passwordHash !== undefined && { password_hash: changes.passwordHash ?? NO_PASSWORD }),
          ...(changes.disabledAt !== undefined && { disabled_at: changes.disabledAt }),
          ...(changes.bumpTokenVersion && { token_version: eb('token_version', '+', 1) }),
        }))
        .where('uuid', '=', uuid)
        .executeTakeFirst(),
    );
    await announceCredentialChange(ex, uuid);
    return Number(result.numUpdatedRows) > 0;
  },

  insertVerification(ex: Executor, row: { tokenHash: string; userUuid: string; expiresAt: string; createdAt: string }) {
    return withDbErrors(
      ex
        .insertInto('email_verifications')
        .values({
          token_hash: row.tokenHash,
          user_uuid: row.userUuid,
          expires_at: row.expiresAt,
          created_at: row.createdAt,
        })
        .execute(),
    );
  },

  /** Deletes the verification and returns its user when it exists and has not expired. */
  async consumeVerification(ex: Executor, tokenHash: string, now: string): Promise<string | undefined> {
    const row = await withDbErrors(
      ex
        .deleteFrom('email_verifications')
        .where('token_hash', '=', tokenHash)
        .returning(['user_uuid', 'expires_at'])
        .executeTakeFirst(),
    );
    return row && row.expires_at > now ? row.user_uuid : undefined;
  },
};
