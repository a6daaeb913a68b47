import type { Db } from '../../db/connect.js';
import { estimateStart } from './tasks-fns.js';
import type { TasksRepo } from './tasks-repo.js';

/** Assumed run time of an agent's task until it has completed some. */
export const DEFAULT_RUN_MS = 60_000;
const SAMPLE = 20;
const CACHE_MS = 10_000;
/** Counting stops here, so the cost of an estimate stays flat however long the queue grows. */
export const AHEAD_CAP = 10_000;

/**
 * estimated_start at submission: now when a worker slot is free for it; otherwise waves of
 * `concurrency` tasks ahead of it, each taking the mean run time of the agent's last 20
 * completed tasks (cached for 10 s per agent).
 */
export function createEstimator(deps: {
  db: Db;
  repo: Pick<TasksRepo, 'countHeld' | 'countAhead' | 'recentRunTimes'>;
}) {
  const runTimes = new Map<string, { avg: number; at: number }>();

  async function averageRunMs(agentUuid: string, now: number): Promise<number> {
    const cached = runTimes.get(agentUuid);
    if (cached && now - cached.at < CACHE_MS) return cached.avg;
    const samples = await deps.repo.recentRunTimes(deps.db.kysely, agentUuid, SAMPLE);
    const avg = samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : DEFAULT_RUN_MS;
    if (runTimes.size > 10_000) runTimes.clear();
    runTimes.set(agentUuid, { avg, at: now });
    return avg;
  }

  return {
    async estimate(agent: { uuid: string; concurrency: number }, priority: number, now: number): Promise<number> {
      const [held, ahead] = await Promise.all([
        deps.repo.countHeld(deps.db.kysely, agent.uuid),
        deps.repo.countAhead(deps.db.kysely, agent.uuid, priority, AHEAD_CAP),
      ]);
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
