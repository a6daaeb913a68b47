import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { prepareQuery } from '../../db/prepared.js';
import { type KeyRole, lowerRole, type Role } from '../../lib/principal.js';
import { announceCredentialChange } from './credential-changes.js';
import { toUser, type UserRow } from './users-repo.js';

/** The most platform keys or ingest tokens one list answers (newest first). */
export const MAX_CREDENTIALS_LISTED = 1000;

export type CredentialTable = 'platform_keys' | 'ingest_tokens';

export interface CredentialRow {
  uuid: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  workspaceUuid: string;
  /** A platform key's role; null for an ingest token. */
  role: Role | null;
  createdBy: { uuid: string; email: string } | null;
  /** A platform key's model allowlist (null: every model, and always for an ingest token). */
  models: string[] | null;
}

/** A live credential, with the user who made it and what it may do in its workspace. */
export interface CredentialWithUser {
  credentialUuid: string;
  lastUsedAt: string | null;
  /** The key's name (null for an ingest token), for the audit log. */
  name: string | null;
  workspaceUuid: string;
  /** The role the credential acts with: the lower of a key's own and its creator's current one. */
  role: Role;
  /** A platform key's model allowlist; null for every model (and for an ingest token). */
  models: string[] | null;
  /** The creator. */
  user: UserRow;
}

// Queries on the path of every authenticated request, built once (see prepareQuery). A credential
// is live while it is not revoked, its workspace is not deleted and its creator is still a member.
/**
 * The one join of a live credential of `table` with its creator and the creator's membership. Both
 * tables share the columns it reads; they are typed as `platform_keys` (the wider of the two), so
 * a caller names a column only one of them has through `sql.ref`.
 */
const liveCredential = (ex: Executor, table: CredentialTable) =>
  ex
    .selectFrom(`${table} as c` as 'platform_keys as c')
    .innerJoin('users as u', 'u.uuid', 'c.created_by')
    .innerJoin('workspace_members as m', (j) =>
      j.onRef('m.workspace_uuid', '=', 'c.workspace_uuid').onRef('m.user_uuid', '=', 'c.created_by'),
    )
    .innerJoin('workspaces as w', 'w.uuid', 'c.workspace_uuid')
    .selectAll('u')
    .select([
      'c.uuid as credential_uuid',
      'c.last_used_at as credential_last_used_at',
      'c.workspace_uuid as workspace_uuid',
      'm.role as member_role',
    ])
    .where('c.revoked_at', 'is', null)
    .where('w.deleted_at', 'is', null);
const liveKeyByHash = prepareQuery(1, (ex, hash: string) =>
  liveCredential(ex, 'platform_keys')
    .select(['c.name as credential_name', 'c.role as credential_role', 'c.models as credential_models'])
    .where('c.key_hash', '=', hash),
);
const liveTokenByHash = prepareQuery(1, (ex, hash: string) =>
  liveCredential(ex, 'ingest_tokens').where(sql.ref('c.token_hash'), '=', hash),
);

/** Platform keys and ingest tokens. */
export const credentialsRepo = {
  insertCredential(
    ex: Executor,
    table: CredentialTable,
    row: {
      uuid: string;
      workspaceUuid: string;
      createdBy: string;
      name?: string;
      role?: KeyRole;
      models?: string[] | null;
      hash: string;
      prefix: string;
      createdAt: string;
    },
  ) {
    const values = {
      uuid: row.uuid,
      workspace_uuid: row.workspaceUuid,
      created_by: row.createdBy,
      prefix: row.prefix,
      created_at: row.createdAt,
      last_used_at: null,
      revoked_at: null,
    };
    return withDbErrors(
      table === 'platform_keys'
        ? ex
            .insertInto('platform_keys')
            .values({
              ...values,
              name: row.name ?? '',
              role: row.role ?? 'admin',
              key_hash: row.hash,
              models: row.models ? toDbJson(row.models) : null,
            })
            .execute()
        : ex
            .insertInto('ingest_tokens')
            .values({ ...values, token_hash: row.hash })
            .execute(),
    );
  },

  /** Newest first, at most MAX_CREDENTIALS_LISTED: a list answer stays bounded however many exist. */
  async listCredentials(
    ex: Executor,
    table: CredentialTable,
    workspaceUuid: string,
    /** Only this one (a key's answer after a change). */
    uuid?: string,
  ): Promise<CredentialRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom(`${table} as c` as 'platform_keys as c')
        .leftJoin('users as u', 'u.uuid', 'c.created_by')
        .selectAll('c')
        .select(['u.email as creator_email'])
        .where('c.workspace_uuid', '=', workspaceUuid)
        .$if(uuid !== undefined, (q) => q.where('c.uuid', '=', uuid as string))
        .orderBy('c.created_at', 'desc')
        .orderBy('c.uuid', 'desc')
        .limit(MAX_CREDENTIALS_LISTED)
        .execute(),
    );
    return rows.map((r) => ({
      uuid: r.uuid,
      name: table === 'platform_keys' ? r.name : null,
      prefix: r.prefix,
      createdAt: r.created_at,
      lastUsedAt: r.last_used_at,
      revokedAt: r.revoked_at,
      workspaceUuid: r.workspace_uuid,
      role: table === 'platform_keys' ? (r.role as Role) : null,
      createdBy: r.created_by && r.creator_email ? { uuid: r.created_by, email: r.creator_email } : null,
      models: table === 'platform_keys' ? modelsOf(r.models) : null,
    }));
  },

  /**
   * Marks a credential of the workspace revoked; undefined when it is not the workspace's or does
   * not exist, else its name (null for a token) and whether this call revoked it.
   */
  async revokeCredential(ex: Executor, table: CredentialTable, workspaceUuid: string, uuid: string, now: string) {
    const found = await withDbErrors(
      ex
        .selectFrom(`${table} as c` as 'platform_keys as c')
        .select(['c.uuid', 'c.revoked_at', 'c.created_by', table === 'platform_keys' ? 'c.name' : 'c.prefix as name'])
        .where('c.uuid', '=', uuid)
        .where('c.workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    if (!found) return undefined;
    const revokedNow = found.revoked_at === null;
    if (revokedNow) {
      await withDbErrors(ex.updateTable(table).set({ revoked_at: now }).where('uuid', '=', uuid).execute());
      await announceCredentialChange(ex, found.created_by ?? workspaceUuid);
    }
    return { name: table === 'platform_keys' ? found.name : null, revokedNow, createdBy: found.created_by };
  },

  /**
   * Revokes every live key and token `userUuid` made in the workspace (they left or were removed);
   * returns what it revoked, for the audit log.
   */
  async revokeCredentialsOf(ex: Executor, workspaceUuid: string, userUuid: string, now: string) {
    const revoked: { table: CredentialTable; uuid: string; name: string | null }[] = [];
    for (const table of ['platform_keys', 'ingest_tokens'] as const) {
      const rows = await withDbErrors(
        ex
          .updateTable(table)
          .set({ revoked_at: now })
          .where('workspace_uuid', '=', workspaceUuid)
          .where('created_by', '=', userUuid)
          .where('revoked_at', 'is', null)
          .returning(table === 'platform_keys' ? ['uuid', 'name'] : ['uuid', 'prefix as name'])
          .execute(),
      );
      for (const row of rows)
        revoked.push({ table, uuid: row.uuid, name: table === 'platform_keys' ? row.name : null });
    }
    await announceCredentialChange(ex, userUuid);
    return revoked;
  },

  /** The live (unrevoked) credential with this hash, joined with its user. */
  async findLiveCredential(
    ex: Executor,
    table: CredentialTable,
    hash: string,
  ): Promise<CredentialWithUser | undefined> {
    const [row] = await withDbErrors(table === 'platform_keys' ? liveKeyByHash(ex, hash) : liveTokenByHash(ex, hash));
    if (!row) return undefined;
    const memberRole = row.member_role as Role;
    return {
      credentialUuid: row.credential_uuid,
      lastUsedAt: row.credential_last_used_at,
      name: 'credential_name' in row ? (row.credential_name as string) : null,
      workspaceUuid: row.workspace_uuid,
      role: 'credential_role' in row ? lowerRole(row.credential_role as Role, memberRole) : memberRole,
      models: 'credential_models' in row ? modelsOf(row.credential_models) : null,
      user: toUser(row),
    };
  },

  /**
   * Changes a platform key of the workspace (revoked ones included): its name and/or model
   * allowlist, the fields given. Undefined when the key is not the workspace's; else its creator,
   * whose cached credentials are announced changed with the write.
   */
  async updateKey(
    ex: Executor,
    workspaceUuid: string,
    uuid: string,
    patch: { name?: string; models?: string[] | null },
  ): Promise<{ createdBy: string | null } | undefined> {
    const set: { name?: string; models?: unknown } = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.models !== undefined) set.models = patch.models === null ? null : toDbJson(patch.models);
    const found = await withDbErrors(
      ex
        .selectFrom('platform_keys')
        .select('created_by')
        .where('uuid', '=', uuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    if (!found) return undefined;
    if (Object.keys(set).length > 0) {
      await withDbErrors(ex.updateTable('platform_keys').set(set).where('uuid', '=', uuid).execute());
      await announceCredentialChange(ex, found.created_by ?? workspaceUuid);
    }
    return { createdBy: found.created_by };
  },

  /** Whether this platform key is the workspace's, revoked ones included (budgets and limits name keys). */
  async keyInWorkspace(ex: Executor, workspaceUuid: string, uuid: string): Promise<boolean> {
    const row = await withDbErrors(
      ex
        .selectFrom('platform_keys')
        .select('uuid')
        .where('uuid', '=', uuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    return row !== undefined;
  },

  touchCredential(ex: Executor, table: CredentialTable, uuid: string, now: string) {
    return withDbErrors(ex.updateTable(table).set({ last_used_at: now }).where('uuid', '=', uuid).execute());
  },
};

/** A stored allowlist: null (every model) or its patterns. */
const modelsOf = (value: unknown): string[] | null =>
  value === null || value === undefined ? null : fromDbJson<string[]>(value);
