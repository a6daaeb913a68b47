import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { prepareQuery } from '../../db/prepared.js';
import type { Role } from '../../lib/principal.js';

/** The name every personal workspace starts with. */
export const PERSONAL_NAME = 'Personal';

// On the path of every session request that names a workspace, built once (see prepareQuery).
const membershipOf = prepareQuery(2, (ex, workspaceUuid: string, userUuid: string) =>
  ex
    .selectFrom('workspace_members as m')
    .innerJoin('workspaces as w', 'w.uuid', 'm.workspace_uuid')
    .select('m.role')
    .where('m.workspace_uuid', '=', workspaceUuid)
    .where('m.user_uuid', '=', userUuid)
    .where('w.deleted_at', 'is', null),
);

/**
 * Who belongs to which workspace, with which role: what authentication needs. The workspaces
 * room (members, invitations, the workspace endpoints) builds on this.
 */
export const membershipsRepo = {
  /** The user's role in a live (not deleted) workspace; undefined when not a member. */
  async roleOf(ex: Executor, workspaceUuid: string, userUuid: string): Promise<Role | undefined> {
    const [row] = await withDbErrors(membershipOf(ex, workspaceUuid, userUuid));
    return row?.role as Role | undefined;
  },

  /**
   * The live team workspaces where the user is the only owner and someone else is a member: the
   * ones their deletion would leave without an owner.
   */
  async soleOwnerOfShared(ex: Executor, userUuid: string): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('workspace_members as m')
        .innerJoin('workspaces as w', 'w.uuid', 'm.workspace_uuid')
        .select('m.workspace_uuid')
        .where('m.user_uuid', '=', userUuid)
        .where('m.role', '=', 'owner')
        .where('w.deleted_at', 'is', null)
        .where('w.uuid', '!=', userUuid)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('workspace_members as o')
                .select('o.user_uuid')
                .whereRef('o.workspace_uuid', '=', 'm.workspace_uuid')
                .where('o.user_uuid', '!=', userUuid)
                .where('o.role', '=', 'owner'),
            ),
          ),
        )
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('workspace_members as x')
              .select('x.user_uuid')
              .whereRef('x.workspace_uuid', '=', 'm.workspace_uuid')
              .where('x.user_uuid', '!=', userUuid),
          ),
        )
        .execute(),
    );
    return rows.map((r) => r.workspace_uuid);
  },

  /**
   * Marks deleted the live team workspaces whose only member is the user (their deletion leaves
   * them to nobody); housekeeping then purges them as any deleted workspace.
   */
  async deleteSoloWorkspaces(ex: Executor, userUuid: string, at: string): Promise<void> {
    await withDbErrors(
      ex
        .updateTable('workspaces')
        .set({ deleted_at: at })
        .where('deleted_at', 'is', null)
        .where('personal', '=', 0)
        .where('uuid', 'in', (eb) =>
          eb.selectFrom('workspace_members as m').select('m.workspace_uuid').where('m.user_uuid', '=', userUuid),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('workspace_members as o')
                .select('o.user_uuid')
                .whereRef('o.workspace_uuid', '=', 'workspaces.uuid')
                .where('o.user_uuid', '!=', userUuid),
            ),
          ),
        )
        .execute(),
    );
  },

  /** Marks the user's personal workspace (its uuid is the user's) deleted, for the background purge. */
  async markPersonalDeleted(ex: Executor, userUuid: string, at: string): Promise<void> {
    await withDbErrors(
      ex
        .updateTable('workspaces')
        .set({ deleted_at: at, updated_at: at })
        .where('uuid', '=', userUuid)
        .where('personal', '=', 1)
        .where('deleted_at', 'is', null)
        .execute(),
    );
  },

  /** A user's personal workspace (its uuid is the user's), with the user as owner. */
  async insertPersonal(ex: Executor, userUuid: string, createdAt: string): Promise<void> {
    await withDbErrors(
      ex
        .insertInto('workspaces')
        .values({
          uuid: userUuid,
          name: PERSONAL_NAME,
          personal: 1,
          created_at: createdAt,
          updated_at: createdAt,
          deleted_at: null,
        })
        .execute(),
    );
    await withDbErrors(
      ex
        .insertInto('workspace_members')
        .values({ workspace_uuid: userUuid, user_uuid: userUuid, role: 'owner', joined_at: createdAt })
        .execute(),
    );
  },
};

export type MembershipsRepo = typeof membershipsRepo;
