import { Cron } from 'croner';
import { type CronSpec, parseCron } from './cron-fns.js';
import { cachedGap } from './gap-fns.js';
import { instantOf, wallClockAt } from './zone-fns.js';

const YEAR_MS = 365.25 * 86_400_000;
/** A pattern must have an occurrence within this long (`0 0 30 2 *` has none). */
const HORIZON_MS = 8 * YEAR_MS;
const BATCH = 64;

/**
 * Croner over naive wall-clock times: it runs the pattern in UTC (offset 0), so its dates are
 * the zone's wall-clock fields; `instantOf` then places each in the zone with our DST rules.
 * Croner's own zone mode is not used: it skips gap times of interval patterns and fires both
 * instants of a repeated time, where schedules fire once (docs/schedules.md).
 */
const croners = new Map<string, Cron>();
function cronOf(spec: CronSpec): Cron {
  let cron = croners.get(spec.pattern);
  if (!cron) {
    cron = new Cron(spec.pattern, { utcOffset: 0, mode: '6-part', domAndDow: false, paused: true });
    if (croners.size > 1000) croners.clear();
    croners.set(spec.pattern, cron);
  }
  return cron;
}

/** A schedule's pattern and zone, as the occurrence functions take them. */
export interface Timing {
  spec: CronSpec;
  zone: string;
}

/**
 * The first `count` occurrence instants (ms) strictly after `after`, in order, each once: the
 * times of one DST gap collapse into the transition instant, a repeated time fires at its first
 * instant only. Fewer when the pattern has no more before `until`.
 */
export function occurrencesAfter(t: Timing, after: number, count: number, until = after + HORIZON_MS): number[] {
  const cron = cronOf(t.spec);
  // Naive wall-clock times at or before the clock's time at `after` lie at or before `after`
  // (in the second pass of a repeated hour some later ones do too: they are filtered out).
  let cursor = wallClockAt(t.zone, after);
  const out: number[] = [];
  while (out.length < count) {
    // Ask croner for no more than needed: a yearly pattern's 64 runs would be 64 years of search.
    const walls = cron.nextRuns(Math.min(BATCH, count - out.length + 1), new Date(cursor));
    if (walls.length === 0) break;
    for (const w of walls) {
      const instant = instantOf(t.zone, w.getTime());
      if (instant > until) return out;
      if (instant > after && instant !== out[out.length - 1]) out.push(instant);
      if (out.length === count) break;
    }
    cursor = (walls[walls.length - 1] as Date).getTime();
  }
  return out;
}

/** The next occurrence strictly after `after`, or null when none within eight years. */
export function nextAfter(t: Timing, after: number): number | null {
  return occurrencesAfter(t, after, 1)[0] ?? null;
}

/**
 * The latest occurrence at or before `now`, given `from`, an occurrence at or before `now`:
 * looks back in doubling windows, so a long outage costs a few look-ups, not one per occurrence.
 */
export function latestUpTo(t: Timing, from: number, now: number): number {
  for (let window = 10_000; ; window *= 2) {
    const lo = Math.max(from - 1, now - window);
    const first = nextAfter(t, lo);
    if (first !== null && first <= now) {
      let latest: number = first;
      for (;;) {
        const more = occurrencesAfter(t, latest, BATCH, now);
        if (more.length === 0) return latest;
        latest = more[more.length - 1] as number;
      }
    }
    if (lo === from - 1) return from;
  }
}

export type TimingCheck = { ok: true; timing: Timing } | { ok: false; field: 'cron'; reason: string };

/** Patterns (and zones) found without an occurrence in the next 8 years, until when that is trusted. */
const barren = new Map<string, number>();
const BARREN_TRUST_MS = 3_600_000;

/** Whether the pattern has an occurrence within 8 years of `now`; a "no" is remembered for an hour. */
function occursWithinHorizon(timing: Timing, now: number): boolean {
  const key = `${timing.spec.pattern}|${timing.zone}`;
  const trustedUntil = barren.get(key);
  if (trustedUntil !== undefined && trustedUntil > now) return false;
  if (nextAfter(timing, now) !== null) return true;
  if (barren.size >= 4096) barren.clear();
  barren.set(key, now + BARREN_TRUST_MS);
  return false;
}

/**
 * The full check of a pattern at `now`: the grammar, a gap (from the time-of-day fields, see
 * gap-fns.ts) of at least `minIntervalSeconds`, and an occurrence within eight years. The cost
 * does not grow with the pattern's occurrences: one day's times at most, and one next occurrence.
 */
export function checkTiming(cron: string, zone: string, now: number, minIntervalSeconds: number): TimingCheck {
  const parsed = parseCron(cron);
  if (!parsed.ok) return { ok: false, field: 'cron', reason: parsed.reason };
  const gap = cachedGap(parsed.spec);
  if (gap < minIntervalSeconds) {
    return {
      ok: false,
      field: 'cron',
      reason: `its times of day are ${gap} seconds apart at the closest; the minimum is ${minIntervalSeconds} seconds (TASKHOOK_SCHEDULE_MIN_INTERVAL_SECONDS)`,
    };
  }
  const timing = { spec: parsed.spec, zone };
  if (!occursWithinHorizon(timing, now)) {
    return { ok: false, field: 'cron', reason: 'has no occurrence within the next 8 years' };
  }
  return { ok: true, timing };
}
