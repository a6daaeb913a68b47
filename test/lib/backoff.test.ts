import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { retryDelayMs, scheduledDelaySeconds } from '../../src/lib/backoff.js';

describe('scheduledDelaySeconds (callbacks)', () => {
  const schedule = [5, 300, 1800, 7200, 18000, 36000, 36000];

  it('stays within ±20% of the schedule entry for the failed attempt', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 10 }),
        fc.nat(20),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (entries, index, random) => {
          const failed = (index % entries.length) + 1;
          const base = entries[failed - 1] as number;
          const delay = scheduledDelaySeconds(entries, failed, () => random);
          expect(delay).not.toBeNull();
          expect(delay).toBeGreaterThanOrEqual(base * 0.8 - 1e-9);
          expect(delay).toBeLessThanOrEqual(base * 1.2 + 1e-9);
        },
      ),
    );
  });

  it('reaches both ends of the jitter and uses the entry of the attempt that failed', () => {
    expect(scheduledDelaySeconds(schedule, 1, () => 0)).toBeCloseTo(4);
    expect(scheduledDelaySeconds(schedule, 1, () => 0.5)).toBeCloseTo(5);
    expect(scheduledDelaySeconds(schedule, 1, () => 0.999999)).toBeCloseTo(6, 4);
    expect(scheduledDelaySeconds(schedule, 2, () => 0.5)).toBeCloseTo(300);
    expect(scheduledDelaySeconds(schedule, 7, () => 0.5)).toBeCloseTo(36000);
  });

  it('answers null once the schedule is exhausted', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1000), { maxLength: 10 }), fc.nat(10), (entries, extra) => {
        expect(scheduledDelaySeconds(entries, entries.length + 1 + extra)).toBeNull();
      }),
    );
    expect(scheduledDelaySeconds(schedule, 8)).toBeNull();
    expect(scheduledDelaySeconds([0.2, 0.2, 0.2], 4)).toBeNull();
  });
});

describe('retryDelayMs (push runtimes)', () => {
  it('waits 1 s, then 2 s, or longer when asked, at most 60 s', () => {
    expect([
      retryDelayMs(1, null),
      retryDelayMs(2, null),
      retryDelayMs(1, 7000),
      retryDelayMs(2, 500),
      retryDelayMs(1, 600_000),
    ]).toEqual([1000, 2000, 7000, 2000, 60_000]);
  });
});
