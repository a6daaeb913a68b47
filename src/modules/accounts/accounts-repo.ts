import type { Selectable } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { UsersTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { prepareQuery } from '../../db/prepared.js';
import { announceCredentialChange } from './credential-changes.js';

/** What `password_hash` holds for an account without a password (OAuth sign-ups): no hash matches it. */
const NO_PASSWORD = '';

/** The most platform keys or ingest tokens one list answers (newest first). */
export const MAX_CREDENTIALS_LISTED = 1000;

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

function toUser(row: Selectable<UsersTable>): UserRow {
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

export type CredentialTable = 'platform_keys' | 'ingest_tokens';

export interface CredentialRow {
  uuid: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface CredentialWithUser {
  credentialUuid: string;
  lastUsedAt: string | null;
  user: UserRow;
}

// Queries on the path of every authenticated request, built once (see prepareQuery).
const userByUuid = prepareQuery(1, (ex, uuid: string) => ex.selectFrom('users').selectAll().where('uuid', '=', uuid));
const liveKeyByHash = prepareQuery(1, (ex, hash: string) =>
  ex
    .selectFrom('users as u')
    .selectAll('u')
    .innerJoin('platform_keys as c', 'c.user_uuid', 'u.uuid')
    .select(['c.uuid as credential_uuid', 'c.last_used_at as credential_last_used_at'])
    .where('c.key_hash', '=', hash)
    .where('c.revoked_at', 'is', null),
);
const liveTokenByHash = prepareQuery(1, (ex, hash: string) =>
  ex
    .selectFrom('users as u')
    .selectAll('u')
    .innerJoin('ingest_tokens as c', 'c.user_uuid', 'u.uuid')
    .select(['c.uuid as credential_uuid', 'c.last_used_at as credential_last_used_at'])
    .where('c.token_hash', '=', hash)
    .where('c.revoked_at', 'is', null),
);

/** The only code that touches the accounts tables. */
export const accountsRepo = {
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

  insertCredential(
    ex: Executor,
    table: CredentialTable,
    row: { uuid: string; userUuid: string; name?: string; hash: string; prefix: string; createdAt: string },
  ) {
    const values = {
      uuid: row.uuid,
      user_uuid: row.userUuid,
      prefix: row.prefix,
      created_at: row.createdAt,
      last_used_at: null,
      revoked_at: null,
    };
    return withDbErrors(
      table === 'platform_keys'
        ? ex
            .insertInto('platform_keys')
            .values({ ...values, name: row.name ?? '', key_hash: row.hash })
            .execute()
        : ex
            .insertInto('ingest_tokens')
            .values({ ...values, token_hash: row.hash })
            .execute(),
    );
  },

  /** Newest first, at most MAX_CREDENTIALS_LISTED: a list answer stays bounded however many exist. */
  async listCredentials(ex: Executor, table: CredentialTable, userUuid: string): Promise<CredentialRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom(table)
        .selectAll()
        .where('user_uuid', '=', userUuid)
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .limit(MAX_CREDENTIALS_LISTED)
        .execute(),
    );
    return rows.map((r) => ({
      uuid: r.uuid,
      name: 'name' in r ? (r.name as string) : null,
      prefix: r.prefix,
      createdAt: r.created_at,
      lastUsedAt: r.last_used_at,
      revokedAt: r.revoked_at,
    }));
  },

  /** Marks the user's credential revoked; false when it is not theirs or does not exist. */
  async revokeCredential(ex: Executor, table: CredentialTable, userUuid: string, uuid: string, now: string) {
    const found = await withDbErrors(
      ex
        .selectFrom(table)
        .select(['uuid', 'revoked_at'])
        .where('uuid', '=', uuid)
        .where('user_uuid', '=', userUuid)
        .executeTakeFirst(),
    );
    if (!found) return false;
    if (found.revoked_at === null) {
      await withDbErrors(ex.updateTable(table).set({ revoked_at: now }).where('uuid', '=', uuid).execute());
      await announceCredentialChange(ex, userUuid);
    }
    return true;
  },

  /** The live (unrevoked) credential with this hash, joined with its user. */
  async findLiveCredential(
    ex: Executor,
    table: CredentialTable,
    hash: string,
  ): Promise<CredentialWithUser | undefined> {
    const [row] = await withDbErrors(table === 'platform_keys' ? liveKeyByHash(ex, hash) : liveTokenByHash(ex, hash));
    if (!row) return undefined;
    return { credentialUuid: row.credential_uuid, lastUsedAt: row.credential_last_used_at, user: toUser(row) };
  },

  touchCredential(ex: Executor, table: CredentialTable, uuid: string, now: string) {
    return withDbErrors(ex.updateTable(table).set({ last_used_at: now }).where('uuid', '=', uuid).execute());
  },

  /** Signing secrets still in force (current first), newest first. */
  listSigningSecrets(ex: Executor, userUuid: string, now: string) {
    return withDbErrors(
      ex
        .selectFrom('signing_secrets')
        .select(['uuid', 'secret_sealed', 'created_at', 'expires_at'])
        .where('user_uuid', '=', userUuid)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .execute(),
    );
  },

  insertSigningSecret(ex: Executor, row: { uuid: string; userUuid: string; sealed: string; createdAt: string }) {
    return withDbErrors(
      ex
        .insertInto('signing_secrets')
        .values({
          uuid: row.uuid,
          user_uuid: row.userUuid,
          secret_sealed: row.sealed,
          created_at: row.createdAt,
          expires_at: null,
        })
        .execute(),
    );
  },

  expireCurrentSigningSecrets(ex: Executor, userUuid: string, expiresAt: string) {
    return withDbErrors(
      ex
        .updateTable('signing_secrets')
        .set({ expires_at: expiresAt })
        .where('user_uuid', '=', userUuid)
        .where('expires_at', 'is', null)
        .execute(),
    );
  },
};

export type AccountsRepo = typeof accountsRepo;
