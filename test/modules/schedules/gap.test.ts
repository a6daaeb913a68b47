import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCron } from '../../../src/modules/schedules/cron-fns.js';
import { gapOf } from '../../../src/modules/schedules/gap-fns.js';
import { checkTiming, occurrencesAfter } from '../../../src/modules/schedules/occurrences-fns.js';

function spec(cron: string) {
  const parsed = parseCron(cron);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.spec;
}
const gap = (cron: string) => gapOf(spec(cron));
const DAY = 86_400;

describe('the gap of a pattern (time-of-day fields only)', () => {
  it.each([
    ['* * * * *', 60],
    ['0 * * * * *', 60],
    ['@hourly', 3600],
    ['@daily', DAY],
    ['@yearly', DAY],
    ['*/30 * * * * *', 30],
    ['0,30 * * * * *', 30],
    ['* * * * * *', 1],
    ['*/2 * * * * *', 2],
    ['0 9,17 * * *', 8 * 3600],
    // From the last time of a day to the first of the next: 23:00 → 01:00.
    ['0 1,23 * * *', 2 * 3600],
    ['0 0 1 * MON', DAY],
    ['15 10 * * 1-5', DAY],
    ['0 0 29 2 *', DAY],
    ['10,50 0 * * * *', 40],
    ['0 59 23 * * *', DAY],
    ['*/2 * * 29 2 *', 2],
  ])('%s → %i', (cron, expected) => {
    expect(gap(cron)).toBe(expected);
  });

  it('ignores the day fields and the zone: a weekly time has a gap of one day', () => {
    const weekly = checkTiming('0 0 * * MON', 'Asia/Kolkata', Date.parse('2026-06-01T00:00:00Z'), 3600);
    expect(weekly.ok).toBe(true);
    const tight = checkTiming('0 0,30 1 1 1 *', 'UTC', Date.parse('2026-06-01T00:00:00Z'), 3600);
    expect(tight).toMatchObject({ ok: false, field: 'cron' });
    if (!tight.ok) expect(tight.reason).toContain('1800 seconds apart');
  });

  it('keeps the stated results of the default minimum (60) and of 1', () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    for (const ok of ['* * * * *', '0 * * * * *', '@hourly']) expect(checkTiming(ok, 'UTC', now, 60).ok).toBe(true);
    for (const no of ['*/30 * * * * *', '0,30 * * * * *', '* * * * * *']) {
      const got = checkTiming(no, 'UTC', now, 60);
      expect(got).toMatchObject({ ok: false, field: 'cron' });
      if (!got.ok) expect(got.reason).toMatch(/\d+ seconds apart at the closest; the minimum is 60 seconds/);
    }
    expect(checkTiming('*/2 * * * * *', 'UTC', now, 1).ok).toBe(true);
  });

  it('a DST transition may bring two occurrences closer in real time, which is allowed', () => {
    // 01:59:30 and 02:59:30 in Berlin; on 2027-03-28 02:59:30 does not exist and fires at 01:00Z,
    // 30 s after 01:59:30 CET. The gap is judged in wall-clock time: 3600 s.
    const now = Date.parse('2026-06-01T00:00:00Z');
    expect(checkTiming('30 59 1,2 * * *', 'Europe/Berlin', now, 60).ok).toBe(true);
  });

  it('equals the smallest distance between consecutive occurrences of a day-matching pattern (property)', () => {
    const subset = (max: number, most: number) =>
      fc.uniqueArray(fc.integer({ min: 0, max }), { minLength: 1, maxLength: most }).map((xs) => xs.join(','));
    fc.assert(
      fc.property(subset(59, 3), subset(59, 3), subset(23, 3), (s, m, h) => {
        const cron = `${s} ${m} ${h} * * *`;
        const parsed = spec(cron);
        // The oracle: croner's occurrences over two whole UTC days, every day matching.
        const from = Date.parse('2026-06-01T00:00:00Z') - 1;
        const occ = occurrencesAfter({ spec: parsed, zone: 'UTC' }, from, 100, from + 2 * DAY * 1000);
        let smallest = DAY;
        for (let i = 1; i < occ.length; i++) {
          smallest = Math.min(smallest, ((occ[i] as number) - (occ[i - 1] as number)) / 1000);
        }
        expect(gapOf(parsed)).toBe(smallest);
      }),
      { numRuns: 200 },
    );
  });
});
