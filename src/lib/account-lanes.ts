/**
 * Per-account lanes in front of work every account shares (the database's one writer on SQLite,
 * the connection pool on PostgreSQL): each account has at most `perAccount` pieces of work in
 * progress, the rest wait in the account's own queue, in order of arrival. An account that sends a
 * thousand submits at once therefore has at most `perAccount` of them ahead of another account's
 * submit in the shared queues, instead of all thousand.
 */

/** What the lanes hold right now, all accounts together. */
export interface AccountLanesStats {
  /** Pieces of work running. */
  inProgress: number;
  /** Pieces of work waiting for a slot of their account. */
  waiting: number;
  /** Pieces of work that had to wait for a slot, since start. */
  waitedTotal: number;
}

interface Lane {
  active: number;
  queue: Array<() => void>;
}

export function createAccountLanes(perAccount: number) {
  // Only accounts with work in progress have a lane, so the map never outgrows what is running.
  const lanes = new Map<string, Lane>();
  let inProgress = 0;
  let waiting = 0;
  let waitedTotal = 0;

  function release(account: string, lane: Lane) {
    inProgress--;
    const next = lane.queue.shift();
    // The slot passes straight to the account's oldest waiter; the lane stays as full as it was.
    if (next) return next();
    lane.active--;
    if (lane.active === 0) lanes.delete(account);
  }

  return {
    /**
     * Runs `work` once `account` has fewer than `perAccount` pieces in progress (at once when it
     * has), and frees the slot when it settles, whatever its outcome.
     */
    async run<T>(account: string, work: () => Promise<T>): Promise<T> {
      let lane = lanes.get(account);
      if (!lane) {
        lane = { active: 0, queue: [] };
        lanes.set(account, lane);
      }
      if (lane.active < perAccount) {
        lane.active++;
      } else {
        waiting++;
        waitedTotal++;
        const queue = lane.queue;
        await new Promise<void>((resolve) => queue.push(resolve));
        waiting--;
      }
      inProgress++;
      try {
        return await work();
      } finally {
        release(account, lane);
      }
    },

    stats(): AccountLanesStats {
      return { inProgress, waiting, waitedTotal };
    },
  };
}

export type AccountLanes = ReturnType<typeof createAccountLanes>;
