import type { CronSpec } from './cron-fns.js';

/**
 * The minimum-interval rule (docs/schedules.md): a pattern's gap comes from its time-of-day fields
 * alone. T is the set of times of day the pattern names (hour × 3600 + minute × 60 + second); the
 * gap is the smallest difference between consecutive elements of T, or from the last time of one
 * day to the first of the next (as if every day matched). A single time gives 86,400. The day
 * fields, the zone and the moment of the request play no part, so the work is bounded by the
 * 86,400 seconds of one day whatever the pattern's occurrences.
 */

export const DAY_SECONDS = 86_400;

const FULL: Record<number, number> = { 0: 60, 1: 60, 2: 24 };

/** The values of one of the first three fields of a spelled-out pattern, ascending. */
function timeField(text: string, index: 0 | 1 | 2): number[] {
  if (text === '*') return Array.from({ length: FULL[index] as number }, (_, i) => i);
  return text
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
}

/** The gap in seconds of a parsed pattern (see above). */
export function gapOf(spec: CronSpec): number {
  const [s = '*', m = '*', h = '*'] = spec.pattern.split(' ');
  const seconds = timeField(s, 0);
  const minutes = timeField(m, 1);
  const hours = timeField(h, 2);
  let first = -1;
  let previous = -1;
  let gap = DAY_SECONDS;
  for (const hour of hours) {
    for (const minute of minutes) {
      for (const second of seconds) {
        const t = hour * 3600 + minute * 60 + second;
        if (first < 0) first = t;
        else if (t - previous < gap) gap = t - previous;
        previous = t;
        // Nothing can be closer than one second apart.
        if (gap === 1) return 1;
      }
    }
  }
  // From the last time of one day to the first of the next; equal to a full day for one time.
  return Math.min(gap, DAY_SECONDS - previous + first);
}

const gaps = new Map<string, number>();

/** `gapOf`, remembered per spelled-out pattern (at most a few thousand kept). */
export function cachedGap(spec: CronSpec): number {
  let gap = gaps.get(spec.pattern);
  if (gap === undefined) {
    gap = gapOf(spec);
    if (gaps.size >= 4096) gaps.clear();
    gaps.set(spec.pattern, gap);
  }
  return gap;
}
