import { isSettled, TASK_STATUSES } from '../tasks/tasks-fns.js';
/** What an attempt's answer means for the delivery. */
export function classify(statusCode: number | null): 'delivered' | 'gone' | 'retry' {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return 'delivered';
  if (statusCode === 410) return 'gone';
  return 'retry';
}

/** The statuses a callback announces: those where the task waits on its user (see `isSettled`). */
export const ANNOUNCED_STATUSES: ReadonlySet<string> = new Set(TASK_STATUSES.filter(isSettled));

/**
 * Which of the due deliveries (oldest first) to send now: at most `room` in all and at most
 * `perWorkspace` in flight per workspace, counting `held` (the workspace's attempts already in flight).
 * `full` names the workspaces that have no slot left, so the next look can skip their deliveries.
 */
export function pickFair<T extends { workspaceUuid: string }>(
  due: readonly T[],
  held: ReadonlyMap<string, number>,
  perWorkspace: number,
  room: number,
): { take: T[]; full: string[] } {
  const counts = new Map(held);
  const take: T[] = [];
  const full = new Set<string>();
  for (const row of due) {
    if (take.length >= room) break;
    const count = counts.get(row.workspaceUuid) ?? 0;
    if (count >= perWorkspace) {
      full.add(row.workspaceUuid);
      continue;
    }
    take.push(row);
    counts.set(row.workspaceUuid, count + 1);
    if (count + 1 >= perWorkspace) full.add(row.workspaceUuid);
  }
  return { take, full: [...full] };
}
