import type { Db } from '../../../db/connect.js';
import type { QueueRepo } from '../queue/queue-repo.js';
import { estimateStart } from '../tasks-fns.js';

/** Assumed run time of an agent's task until it has completed some. */
export const DEFAULT_RUN_MS = 60_000;
const SAMPLE = 20;
const CACHE_MS = 10_000;
/** Queue depths are re-counted at most this often per agent and priority. */
const DEPTH_CACHE_MS = 1_000;
/** Counting stops here, so the cost of an estimate stays flat however long the queue grows. */
export const AHEAD_CAP = 10_000;

/**
 * estimated_start at submission: now when a worker slot is free for it; otherwise waves of
 * `concurrency` tasks ahead of it, each taking the mean run time of the agent's last 20
 * completed tasks (cached for 10 s per agent). The queue depth is counted at most once a second
 * per agent and priority and advanced locally by each submission in between, so a submission
 * costs the same however long the queue is.
 */
export function createEstimator(deps: {
  db: Db;
  queue: Pick<QueueRepo, 'countHeld' | 'countAhead' | 'recentRunTimes'>;
}) {
  const runTimes = new Map<string, { avg: number; at: number }>();
  const depths = new Map<string, { held: number; ahead: number; at: number }>();

  async function depth(agentUuid: string, priority: number, now: number) {
    const key = `${agentUuid}:${priority}`;
    const cached = depths.get(key);
    if (cached && now - cached.at < DEPTH_CACHE_MS) {
      cached.ahead += 1;
      return { held: cached.held, ahead: cached.ahead - 1 };
    }
    const [held, ahead] = await Promise.all([
      deps.queue.countHeld(deps.db.kysely, agentUuid),
      deps.queue.countAhead(deps.db.kysely, agentUuid, priority, AHEAD_CAP),
    ]);
    if (depths.size > 10_000) depths.clear();
    depths.set(key, { held, ahead: ahead + 1, at: now });
    return { held, ahead };
  }

  async function averageRunMs(agentUuid: string, now: number): Promise<number> {
    const cached = runTimes.get(agentUuid);
    if (cached && now - cached.at < CACHE_MS) return cached.avg;
    const samples = await deps.queue.recentRunTimes(deps.db.kysely, agentUuid, SAMPLE);
    const avg = samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : DEFAULT_RUN_MS;
    if (runTimes.size > 10_000) runTimes.clear();
    runTimes.set(agentUuid, { avg, at: now });
    return avg;
  }

  return {
    async estimate(agent: { uuid: string; concurrency: number }, priority: number, now: number): Promise<number> {
      const { held, ahead } = await depth(agent.uuid, priority, now);
      const free = agent.concurrency - held;
      if (ahead < free) return now;
      return estimateStart({
        now,
        ahead,
        free,
        concurrency: agent.concurrency,
        avgRunMs: await averageRunMs(agent.uuid, now),
      });
    },
  };
}
