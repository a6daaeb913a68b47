import type { Db, Executor } from '../../db/connect.js';
import { AppError, invalid } from '../../http/errors.js';
import { requirePlainName } from '../../http/names.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { Clock } from '../../lib/time.js';
import type { Mailer } from '../accounts/mailer.js';
import type { AgentsService } from '../agents/agents-service.js';
import { type MemberRow, type WorkspaceRow, workspacesRepo } from './workspaces-repo.js';

/** A user belongs to at most this many live workspaces, the personal one included. */
export const MAX_WORKSPACES_PER_USER = 100;
/** A workspace has at most this many members. */
export const MAX_MEMBERS = 1000;
/** A workspace has at most this many pending invitations. */
export const MAX_PENDING_INVITATIONS = 100;
/** A workspace name's length bounds. */
export const MAX_NAME_LENGTH = 100;

/** What the workspaces room needs from the rest of the application. */
export interface WorkspacesDeps {
  db: Db;
  clock: Clock;
  box: SecretBox;
  mailer: Pick<Mailer, 'sendInvitation'>;
  publicUrl: string;
  invitationTtlMs: number;
  /** Most workspaces a user may own besides their personal one (TASKHOOK_MAX_WORKSPACES_PER_USER). */
  maxOwnedWorkspaces: number;
  /** Deletes the agents of a workspace being deleted, as `DELETE /agent` does. */
  agents: Pick<AgentsService, 'prepareWorkspaceRemoval' | 'removeAllOfWorkspaceIn'>;
  /** In the deleting transaction: drops the workspace's callbacks not yet sent. */
  dropPendingCallbacks: (trx: Executor, workspaceUuid: string) => Promise<void>;
  /** After a commit that changed a user's access: this instance's cached credentials of them go. */
  credentialsChanged: (userUuid: string) => void;
  /** Where a removal is announced (`member:removed`), inside its transaction. */
  events: Pick<EventHub, 'emit'>;
}

/** The workspace object of the API. */
export const workspaceView = (w: WorkspaceRow) => ({
  uuid: w.uuid,
  name: w.name,
  personal: w.personal,
  role: w.role,
  created_at: w.createdAt,
  updated_at: w.updatedAt,
});

/** The member object of the API. */
export const memberView = (m: MemberRow) => ({
  user_uuid: m.userUuid,
  email: m.email,
  role: m.role,
  joined_at: m.joinedAt,
});

/**
 * @throws AppError INVALID_REQUEST (`name`) for a name that is only whitespace or holds a control
 * character (lengths are the schema's).
 */
export function requireName(name: string): string {
  if (name.trim() === '') throw invalid('name', 'must not be only whitespace');
  return requirePlainName(name);
}

export const personalRefused = () =>
  new AppError('PERSONAL_WORKSPACE', 'The personal workspace cannot be shared, left or deleted');

export const lastOwner = () =>
  new AppError('LAST_OWNER', 'A workspace needs at least one owner: make another member owner first');

/** 400 `LIMIT_EXCEEDED`; `field` names the limit (`workspaces`, `members`, `invitations`, `role`). */
export const limitExceeded = (message: string, field: string) =>
  new AppError('LIMIT_EXCEEDED', message, { field, reason: message });

/**
 * Refuses making `userUuid` the owner of one more workspace when they already own the most allowed
 * besides their personal one. Locks their personal workspace's row first (its uuid is the user's),
 * so concurrent creates, promotions and accepts of one user take turns and never overshoot.
 * @throws AppError LIMIT_EXCEEDED with `details.field` = `field`.
 */
export async function requireRoomToOwn(trx: Executor, deps: WorkspacesDeps, userUuid: string, field: string) {
  await workspacesRepo.lock(trx, userUuid);
  const max = deps.maxOwnedWorkspaces;
  if ((await workspacesRepo.countOwned(trx, userUuid)) >= max) {
    throw limitExceeded(`A user can own at most ${max} workspaces besides their personal one`, field);
  }
}
