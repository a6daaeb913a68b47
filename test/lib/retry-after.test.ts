import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryAfterSeconds } from '../../src/lib/retry-after.js';

describe('retryAfterSeconds', () => {
  const now = Date.parse('2026-11-22T10:00:00.000Z');
  const cases: Array<[string | undefined, number | null]> = [
    [undefined, null],
    ['', null],
    ['2', 2],
    [' 120 ', 120],
    ['0', 0],
    ['86400', 86_400],
    ['999999', 86_400],
    ['Sun, 22 Nov 2026 10:00:30 GMT', 30],
    ['Sunday, 22-Nov-26 10:00:30 GMT', 30],
    ['Sun Nov 22 10:00:30 2026', 30],
    ['Sun, 22 Nov 2026 09:00:00 GMT', 0],
    ['Mon, 23 Nov 2026 10:00:00 GMT', 86_400],
    ['Sun, 22 Nov 2099 10:00:00 GMT', 86_400],
    ['soon', null],
    ['-5', null],
    ['1.5', null],
    ['Foo 2099', null],
    ['next year 2099', null],
    ['12abc', null],
    ['2026-11-22T10:00:30Z', null],
  ];
  it.each(cases)('%j → %j', (value, expected) => {
    expect(retryAfterSeconds(value, now)).toBe(expected);
  });

  it('answers a number of seconds between 0 and a day for any delay', () => {
    fc.assert(
      fc.property(fc.nat(), (seconds) => {
        expect(retryAfterSeconds(String(seconds), now)).toBe(Math.min(seconds, 86_400));
      }),
    );
  });
});

describe('retryAfterMs', () => {
  it('is the same rule in milliseconds, reading the first of repeated headers', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(retryAfterMs('7', now)).toBe(7000);
    expect(retryAfterMs(['7', '9'], now)).toBe(7000);
    expect(retryAfterMs('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('1.5', now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(null, now)).toBeNull();
    expect(retryAfterMs('999999', now)).toBe(86_400_000);
  });
});
