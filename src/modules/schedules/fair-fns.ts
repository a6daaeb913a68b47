/**
 * Fair deciding across workspaces (docs/schedules.md): due occurrences are decided in rounds. Each
 * round takes, from every workspace that has one, its earliest due occurrence (earliest
 * `next_run_at`, then schedule uuid); within a round the workspaces come in order of their least
 * recent decision, a workspace never decided before first. One workspace's backlog thus delays
 * another's occurrence by at most one decision per workspace per round, never by the backlog.
 */

/** What the order needs of a due schedule. */
export interface DueItem {
  uuid: string;
  workspaceUuid: string;
  nextRunAt: string | null;
}

const byDue = (a: DueItem, b: DueItem) =>
  (a.nextRunAt ?? '') < (b.nextRunAt ?? '')
    ? -1
    : (a.nextRunAt ?? '') > (b.nextRunAt ?? '')
      ? 1
      : a.uuid < b.uuid
        ? -1
        : a.uuid > b.uuid
          ? 1
          : 0;

/**
 * The order in which to decide `due`: round by round, as above. `lastDecided` maps a workspace to
 * the sequence number of its latest decision (higher is more recent); a workspace it does not
 * name was never decided. Ties (never decided, or equal) go to the workspace with the earlier due
 * occurrence.
 */
export function fairOrder<T extends DueItem>(due: readonly T[], lastDecided: ReadonlyMap<string, number>): T[] {
  const groups = new Map<string, T[]>();
  for (const item of due) {
    const group = groups.get(item.workspaceUuid);
    if (group) group.push(item);
    else groups.set(item.workspaceUuid, [item]);
  }
  for (const group of groups.values()) group.sort(byDue);
  const last = (ws: string) => lastDecided.get(ws) ?? Number.NEGATIVE_INFINITY;
  const queues = [...groups.entries()]
    .sort(([a, ga], [b, gb]) => last(a) - last(b) || byDue(ga[0] as T, gb[0] as T))
    .map(([, group]) => group);
  const out: T[] = [];
  for (let round = 0; out.length < due.length; round++) {
    for (const queue of queues) {
      const item = queue[round];
      if (item) out.push(item);
    }
  }
  return out;
}

/**
 * The record of each workspace's latest decision, for `fairOrder`: sequence numbers increase with
 * every decision; the least recent entries are forgotten past `max` (a forgotten workspace counts
 * as never decided, which puts it where it already was: first).
 */
export function createDecisionRecord(max = 10_000) {
  const latest = new Map<string, number>();
  let sequence = 0;
  return {
    latest: latest as ReadonlyMap<string, number>,
    decided(workspaceUuid: string) {
      // Re-inserting keeps the map in order of recency, least recent first.
      latest.delete(workspaceUuid);
      latest.set(workspaceUuid, ++sequence);
      if (latest.size > max) latest.delete(latest.keys().next().value as string);
    },
  };
}
