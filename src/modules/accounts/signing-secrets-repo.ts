import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';

/** The workspace's callback signing secrets. */
export const signingSecretsRepo = {
  /** Signing secrets still in force (current first), newest first. */
  listSigningSecrets(ex: Executor, workspaceUuid: string, now: string) {
    return withDbErrors(
      ex
        .selectFrom('signing_secrets')
        .select(['uuid', 'secret_sealed', 'created_at', 'expires_at'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .execute(),
    );
  },

  insertSigningSecret(ex: Executor, row: { uuid: string; workspaceUuid: string; sealed: string; createdAt: string }) {
    return withDbErrors(
      ex
        .insertInto('signing_secrets')
        .values({
          uuid: row.uuid,
          workspace_uuid: row.workspaceUuid,
          secret_sealed: row.sealed,
          created_at: row.createdAt,
          expires_at: null,
        })
        .execute(),
    );
  },

  expireCurrentSigningSecrets(ex: Executor, workspaceUuid: string, expiresAt: string) {
    return withDbErrors(
      ex
        .updateTable('signing_secrets')
        .set({ expires_at: expiresAt })
        .where('workspace_uuid', '=', workspaceUuid)
        .where('expires_at', 'is', null)
        .execute(),
    );
  },
};
