/**
 * The hand-out order of concurrency keys, pure: which of an agent's claimable tasks go out next
 * when some tasks carry a key (docs/architecture.md, "Claiming").
 */

/** The keyless group's name where groups are named by a string (a real key is never empty). */
export const KEYLESS = '';

/** A claimable task, as much of it as the choice needs. */
export interface Candidate {
  uuid: string;
  key: string | null;
  priority: number;
  createdAt: string;
}

/** What the choice starts from; `served` and `held` are updated as tasks are handed out. */
export interface FairState {
  /** Each group's (`KEYLESS` for keyless) last serving: higher is more recent; absent or null: never. */
  served: Map<string, number | null>;
  /** Tasks of each key held now. */
  held: Map<string, number>;
  /** The agent's per-key cap; null: none. */
  cap: number | null;
}

/** `a` goes out before `b` by claim order: priority (higher first), then age, then id. */
export function claimOrder(a: Candidate, b: Candidate): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
}

export const groupOf = (key: string | null): string => key ?? KEYLESS;

/** Whether group `a` (head task `ha`) is served before group `b` (head task `hb`) at one priority. */
function servedFirst(state: FairState, a: string, ha: Candidate, b: string, hb: Candidate): boolean {
  const sa = state.served.get(a) ?? null;
  const sb = state.served.get(b) ?? null;
  if (sa !== sb) {
    if (sa === null) return true;
    if (sb === null) return false;
    return sa < sb;
  }
  return claimOrder(ha, hb) < 0;
}

/**
 * Chooses up to `count` tasks, one hand-out at a time: the highest priority among eligible tasks
 * (a key below the cap); within it the group served least recently (never served first; ties:
 * the group whose oldest task is oldest); that group's oldest task. Each hand-out marks its group
 * served (after `lastSeq`) and, for a key, one more held.
 * @param candidates claimable tasks, in any order.
 * @returns the chosen tasks in hand-out order, and the serving number given last.
 */
export function chooseFair(
  candidates: readonly Candidate[],
  state: FairState,
  count: number,
  lastSeq: number,
): { chosen: Candidate[]; lastSeq: number } {
  const queues = new Map<string, Candidate[]>();
  for (const c of [...candidates].sort(claimOrder)) {
    const group = groupOf(c.key);
    const queue = queues.get(group);
    if (queue) queue.push(c);
    else queues.set(group, [c]);
  }
  const chosen: Candidate[] = [];
  let seq = lastSeq;
  while (chosen.length < count) {
    let best: { group: string; head: Candidate } | null = null;
    for (const [group, queue] of queues) {
      const head = queue[0];
      if (!head || !eligible(state, head)) continue;
      if (
        !best ||
        head.priority > best.head.priority ||
        (head.priority === best.head.priority && servedFirst(state, group, head, best.group, best.head))
      ) {
        best = { group, head };
      }
    }
    if (!best) break;
    (queues.get(best.group) as Candidate[]).shift();
    chosen.push(best.head);
    state.served.set(best.group, ++seq);
    if (best.head.key !== null) state.held.set(best.head.key, (state.held.get(best.head.key) ?? 0) + 1);
  }
  return { chosen, lastSeq: seq };
}

function eligible(state: FairState, task: Candidate): boolean {
  return task.key === null || state.cap === null || (state.held.get(task.key) ?? 0) < state.cap;
}
