import type { Db } from '../../db/connect.js';
import type { Log } from '../../lib/log.js';
import { createLoop } from '../../lib/loop.js';
import { type Clock, iso, type Timers } from '../../lib/time.js';
import { parseCron } from './cron-fns.js';
import type { Decisions } from './decide.js';
import { createDecisionRecord, fairOrder } from './fair-fns.js';
import { latestUpTo, nextAfter } from './occurrences-fns.js';
import type { ScheduleRow, SchedulesRepo } from './schedules-repo.js';

/** The clock's pass: every second, so an occurrence is decided at most about 1 s after it. */
export const SCHEDULER_INTERVAL_MS = 1000;
/** Rounds one pass reads: at most this many due schedules of each workspace. */
const ROUNDS = 20;
/** Due schedules one pass decides (at most) before it asks for the next pass at once. */
const BATCH = 200;
/** A missed occurrence still fires this long after it, whatever `catch_up_seconds` says. */
const MIN_CATCH_UP_MS = 10_000;

/**
 * The schedules' clock, in the background substrate (a loop like the sweeper's). Each pass finds
 * the due schedules and decides each one's latest past occurrence, in fair rounds across
 * workspaces (fair-fns.ts): the claim (moving
 * `next_run_at` on, conditional on its old value) and the decision (task and run) are one
 * transaction, so with any number of instances and passes each occurrence is decided once, and a
 * crash before the commit leaves it undecided for the next pass (docs/schedules.md).
 */
export function createScheduler(deps: {
  db: Db;
  repo: SchedulesRepo;
  decisions: Decisions;
  clock: Clock;
  log: Log;
  timers?: Timers;
  intervalMs?: number;
}) {
  const { db, repo, decisions } = deps;

  /** Decides what is due of one schedule at `nowMs`; false when another pass got it first. */
  async function fire(s: ScheduleRow, nowMs: number): Promise<boolean> {
    const expected = s.nextRunAt as string;
    const parsed = parseCron(s.cron);
    // Stored patterns were checked; one that no longer parses (a grammar change) stops firing.
    const timing = parsed.ok ? { spec: parsed.spec, zone: s.timezone } : null;
    const latest = timing ? latestUpTo(timing, Date.parse(expected), nowMs) : Date.parse(expected);
    const next = timing ? nextAfter(timing, latest) : null;
    const missed = nowMs - latest > Math.max(s.catchUpSeconds * 1000, MIN_CATCH_UP_MS);
    const pending = await decisions.prepare(s, latest, nowMs, false, !missed);
    return db.transaction(async (trx) => {
      if (!(await repo.claim(trx, s.uuid, expected, next === null ? null : iso(next)))) return false;
      const current = await repo.lock(trx, s.uuid);
      if (!current) return false;
      await decisions.decide(trx, current, pending, missed);
      return true;
    });
  }

  /** Each workspace's latest decision on this instance: the order of the rounds. */
  const record = createDecisionRecord();

  async function runOnce(): Promise<number> {
    const nowMs = deps.clock.now();
    const due = await repo.dueByWorkspace(db.kysely, iso(nowMs), ROUNDS, BATCH);
    let decided = 0;
    for (const s of fairOrder(due, record.latest)) {
      record.decided(s.workspaceUuid);
      try {
        if (await fire(s, nowMs)) decided++;
      } catch (err) {
        deps.log.warn({ err, schedule: s.uuid }, 'A schedule could not be fired; trying again at the next pass');
      }
    }
    // More may be due than one pass read: the whole batch, or a workspace's whole share of rounds.
    const perWorkspace = new Map<string, number>();
    for (const s of due) perWorkspace.set(s.workspaceUuid, (perWorkspace.get(s.workspaceUuid) ?? 0) + 1);
    if (due.length === BATCH || [...perWorkspace.values()].some((n) => n >= ROUNDS)) loop.nudge();
    return decided;
  }

  const loop = createLoop({
    name: 'The scheduler',
    intervalMs: deps.intervalMs ?? SCHEDULER_INTERVAL_MS,
    run: runOnce,
    log: deps.log,
    immediate: true,
    timers: deps.timers,
  });

  return {
    /** One pass now (tests and the app's `background.schedule`); resolves to the number decided. */
    runOnce,
    start: loop.start,
    stop: loop.stop,
  };
}
