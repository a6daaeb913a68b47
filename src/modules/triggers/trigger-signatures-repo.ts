import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import type { WebhookAccepted } from './triggers-schemas.js';

/** A remembered signature of an accepted signed delivery (replay-fns.ts). */
export interface RememberedSignature {
  triggerUuid: string;
  signature: string;
  workspaceUuid: string;
  expiresAt: string;
  response: WebhookAccepted;
}

/** All SQL on `trigger_signatures` but housekeeping's deletes. Part of `triggersRepo`. */
export const signaturesRepo = {
  async findSignature(ex: Executor, triggerUuid: string, signature: string) {
    const row = await withDbErrors(
      ex
        .selectFrom('trigger_signatures')
        .select(['expires_at', 'response'])
        .where('trigger_uuid', '=', triggerUuid)
        .where('signature', '=', signature)
        .executeTakeFirst(),
    );
    return row && { expiresAt: row.expires_at, response: fromDbJson<WebhookAccepted>(row.response) };
  },

  /** Remembers a signature; a concurrent copy that got there first makes this a unique violation. */
  async rememberSignature(ex: Executor, s: RememberedSignature) {
    await withDbErrors(
      ex
        .insertInto('trigger_signatures')
        .values({
          trigger_uuid: s.triggerUuid,
          signature: s.signature,
          workspace_uuid: s.workspaceUuid,
          expires_at: s.expiresAt,
          response: toDbJson(s.response),
        })
        .execute(),
    );
  },

  async forgetSignature(ex: Executor, triggerUuid: string, signature: string) {
    await withDbErrors(
      ex
        .deleteFrom('trigger_signatures')
        .where('trigger_uuid', '=', triggerUuid)
        .where('signature', '=', signature)
        .execute(),
    );
  },
};
