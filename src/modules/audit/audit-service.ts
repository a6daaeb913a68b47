import type { Db } from '../../db/connect.js';
import { invalid } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/time.js';
import { type AuditRow, auditRepo } from './audit-repo.js';

const DAY_MS = 86_400_000;
const CURSOR_TAG = 'audit_log';
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The opaque position after `entry`: base64url of a tagged JSON array. */
export function encodeAuditCursor(entry: { at: string; id: string }): string {
  return Buffer.from(JSON.stringify([CURSOR_TAG, entry.at, entry.id])).toString('base64url');
}

/**
 * The position a cursor names, or null unless it is exactly what `encodeAuditCursor` makes (the
 * tag, a stored timestamp and a lower-case UUID, in canonical base64url).
 */
export function decodeAuditCursor(cursor: string): { at: string; id: string } | null {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== CURSOR_TAG) return null;
    const [, at, id] = parsed;
    if (typeof at !== 'string' || !TIMESTAMP.test(at) || typeof id !== 'string' || !UUID.test(id)) return null;
    if (Number.isNaN(Date.parse(at)) || encodeAuditCursor({ at, id }) !== cursor) return null;
    return { at, id };
  } catch {
    return null;
  }
}

/** Reading a workspace's audit log: entries within retention, newest first, in keyset pages. */
export function createAuditService(deps: { db: Db; clock: Clock; retentionDays: number }) {
  return {
    /** @throws AppError INVALID_REQUEST (`cursor`) for a cursor this endpoint did not issue. */
    async list(
      workspaceUuid: string,
      q: { limit: number; cursor?: string; action?: string },
    ): Promise<{ entries: AuditRow[]; next_cursor: string | null }> {
      const after = q.cursor === undefined ? undefined : decodeAuditCursor(q.cursor);
      if (after === null) throw invalid('cursor', 'was not issued by this endpoint');
      const notBefore = iso(deps.clock.now() - deps.retentionDays * DAY_MS);
      const rows = await auditRepo.list(deps.db.kysely, workspaceUuid, {
        notBefore,
        limit: q.limit + 1,
        action: q.action,
        after,
      });
      const entries = rows.slice(0, q.limit);
      const last = entries.at(-1);
      return { entries, next_cursor: rows.length > q.limit && last ? encodeAuditCursor(last) : null };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
