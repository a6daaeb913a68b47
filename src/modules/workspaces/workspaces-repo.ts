import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { lockRows } from '../../db/transactions.js';
import type { Role } from '../../lib/principal.js';

/** A live workspace as one of its members sees it. */
export interface WorkspaceRow {
  uuid: string;
  name: string;
  personal: boolean;
  role: Role;
  createdAt: string;
  updatedAt: string;
}

export interface MemberRow {
  userUuid: string;
  email: string;
  role: Role;
  joinedAt: string;
}

const toWorkspace = (r: {
  uuid: string;
  name: string;
  personal: number | boolean;
  role: string;
  created_at: string;
  updated_at: string;
}): WorkspaceRow => ({
  uuid: r.uuid,
  name: r.name,
  personal: Boolean(r.personal),
  role: r.role as Role,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toMember = (r: { user_uuid: string; email: string; role: string; joined_at: string }): MemberRow => ({
  userUuid: r.user_uuid,
  email: r.email,
  role: r.role as Role,
  joinedAt: r.joined_at,
});

function memberships(ex: Executor, userUuid: string) {
  return ex
    .selectFrom('workspace_members as m')
    .innerJoin('workspaces as w', 'w.uuid', 'm.workspace_uuid')
    .select(['w.uuid', 'w.name', 'w.personal', 'm.role', 'w.created_at', 'w.updated_at'])
    .where('m.user_uuid', '=', userUuid)
    .where('w.deleted_at', 'is', null);
}

/** Workspaces and their members (the rows the personal workspace starts with are made by accounts). */
export const workspacesRepo = {
  /** The names of these workspaces (deleted ones too), by uuid. */
  async namesOf(ex: Executor, uuids: string[]): Promise<Map<string, string>> {
    if (uuids.length === 0) return new Map();
    const rows = await withDbErrors(
      ex.selectFrom('workspaces').select(['uuid', 'name']).where('uuid', 'in', uuids).execute(),
    );
    return new Map(rows.map((r) => [r.uuid, r.name]));
  },

  async insert(ex: Executor, w: { uuid: string; name: string; ownerUuid: string; createdAt: string }) {
    await withDbErrors(
      ex
        .insertInto('workspaces')
        .values({
          uuid: w.uuid,
          name: w.name,
          personal: 0,
          created_at: w.createdAt,
          updated_at: w.createdAt,
          deleted_at: null,
        })
        .execute(),
    );
    await workspacesRepo.insertMember(ex, w.uuid, w.ownerUuid, 'owner', w.createdAt);
  },

  insertMember(ex: Executor, workspaceUuid: string, userUuid: string, role: Role, joinedAt: string) {
    return withDbErrors(
      ex
        .insertInto('workspace_members')
        .values({ workspace_uuid: workspaceUuid, user_uuid: userUuid, role, joined_at: joinedAt })
        .execute(),
    );
  },

  /** Every live workspace the user belongs to: the personal one first, then oldest first. */
  async listOf(ex: Executor, userUuid: string): Promise<WorkspaceRow[]> {
    const rows = await withDbErrors(
      memberships(ex, userUuid)
        .orderBy('w.personal', 'desc')
        .orderBy('w.created_at', 'asc')
        .orderBy('w.uuid', 'asc')
        .execute(),
    );
    return rows.map(toWorkspace);
  },

  async findOf(ex: Executor, userUuid: string, workspaceUuid: string): Promise<WorkspaceRow | undefined> {
    const row = await withDbErrors(memberships(ex, userUuid).where('w.uuid', '=', workspaceUuid).executeTakeFirst());
    return row && toWorkspace(row);
  },

  /** How many live workspaces the user belongs to (personal included). */
  async countOf(ex: Executor, userUuid: string): Promise<number> {
    const row = await withDbErrors(
      memberships(ex, userUuid)
        .clearSelect()
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** How many live team workspaces (the personal one not counted) the user holds the owner role in. */
  async countOwned(ex: Executor, userUuid: string): Promise<number> {
    const row = await withDbErrors(
      memberships(ex, userUuid)
        .clearSelect()
        .select((eb) => eb.fn.countAll().as('n'))
        .where('m.role', '=', 'owner')
        // The personal workspace's uuid is its user's.
        .where('w.uuid', '!=', userUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  rename(ex: Executor, workspaceUuid: string, name: string, now: string) {
    return withDbErrors(
      ex.updateTable('workspaces').set({ name, updated_at: now }).where('uuid', '=', workspaceUuid).execute(),
    );
  },

  /** Marks a live workspace deleted; false when it already was. */
  async markDeleted(ex: Executor, workspaceUuid: string, now: string): Promise<boolean> {
    const result = await withDbErrors(
      ex
        .updateTable('workspaces')
        .set({ deleted_at: now, updated_at: now })
        .where('uuid', '=', workspaceUuid)
        .where('deleted_at', 'is', null)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) > 0;
  },

  /**
   * Locks the workspace's row until the transaction ends (PostgreSQL; SQLite has one writer), so a
   * room that caps what a workspace holds counts and inserts without a concurrent create slipping in.
   */
  async lock(ex: Executor, workspaceUuid: string): Promise<void> {
    await withDbErrors(
      lockRows(ex, ex.selectFrom('workspaces').select('uuid').where('uuid', '=', workspaceUuid)).execute(),
    );
  },

  /**
   * Every member row of the workspace, locked until the transaction ends (PostgreSQL), so two
   * concurrent changes of owners see each other's outcome.
   */
  async lockMembers(ex: Executor, workspaceUuid: string): Promise<{ userUuid: string; role: Role }[]> {
    const query = ex
      .selectFrom('workspace_members')
      .select(['user_uuid', 'role'])
      .where('workspace_uuid', '=', workspaceUuid)
      .orderBy('user_uuid');
    const rows = await withDbErrors(lockRows(ex, query).execute());
    return rows.map((r) => ({ userUuid: r.user_uuid, role: r.role as Role }));
  },

  /** Members with their e-mail addresses, oldest first. */
  async listMembers(ex: Executor, workspaceUuid: string): Promise<MemberRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('workspace_members as m')
        .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
        .select(['m.user_uuid', 'u.email', 'm.role', 'm.joined_at'])
        .where('m.workspace_uuid', '=', workspaceUuid)
        .orderBy('m.joined_at', 'asc')
        .orderBy('m.user_uuid', 'asc')
        .execute(),
    );
    return rows.map(toMember);
  },

  async findMember(ex: Executor, workspaceUuid: string, userUuid: string): Promise<MemberRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('workspace_members as m')
        .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
        .select(['m.user_uuid', 'u.email', 'm.role', 'm.joined_at'])
        .where('m.workspace_uuid', '=', workspaceUuid)
        .where('m.user_uuid', '=', userUuid)
        .executeTakeFirst(),
    );
    return row && toMember(row);
  },

  /** Is a user with this (normalized) e-mail a member? */
  async hasMemberWithEmail(ex: Executor, workspaceUuid: string, emailLower: string): Promise<boolean> {
    const row = await withDbErrors(
      ex
        .selectFrom('workspace_members as m')
        .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
        .select('m.user_uuid')
        .where('m.workspace_uuid', '=', workspaceUuid)
        .where('u.email', '=', emailLower)
        .executeTakeFirst(),
    );
    return row !== undefined;
  },

  /**
   * A member's current role and whether their account is disabled; undefined when they are not a
   * member. `lock` locks their member row until the transaction ends (PostgreSQL), so a concurrent
   * role change or removal (which locks every member row) waits for, or is seen by, the caller.
   */
  async standingOf(
    ex: Executor,
    workspaceUuid: string,
    userUuid: string,
    lock = false,
  ): Promise<{ role: Role; disabled: boolean } | undefined> {
    const query = ex
      .selectFrom('workspace_members')
      .select('role')
      .where('workspace_uuid', '=', workspaceUuid)
      .where('user_uuid', '=', userUuid);
    const member = await withDbErrors((lock ? lockRows(ex, query) : query).executeTakeFirst());
    if (!member) return undefined;
    const user = await withDbErrors(
      ex.selectFrom('users').select('disabled_at').where('uuid', '=', userUuid).executeTakeFirst(),
    );
    return { role: member.role as Role, disabled: !user || user.disabled_at !== null };
  },

  setRole(ex: Executor, workspaceUuid: string, userUuid: string, role: Role) {
    return withDbErrors(
      ex
        .updateTable('workspace_members')
        .set({ role })
        .where('workspace_uuid', '=', workspaceUuid)
        .where('user_uuid', '=', userUuid)
        .execute(),
    );
  },

  removeMember(ex: Executor, workspaceUuid: string, userUuid: string) {
    return withDbErrors(
      ex
        .deleteFrom('workspace_members')
        .where('workspace_uuid', '=', workspaceUuid)
        .where('user_uuid', '=', userUuid)
        .execute(),
    );
  },
};

export type WorkspacesRepo = typeof workspacesRepo;
