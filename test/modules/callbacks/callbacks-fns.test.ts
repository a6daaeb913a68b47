import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  ANNOUNCED_STATUSES,
  classify,
  nextDelaySeconds,
  retryAfterSeconds,
  signatureHeader,
} from '../../../src/modules/callbacks/callbacks-fns.js';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What a receiver gets: the three Standard Webhooks headers. */
function headers(id: string, timestamp: number, signature: string) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

describe('signatureHeader (Standard Webhooks)', () => {
  it('verifies with the standardwebhooks package, for any id and body', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.jsonValue(), fc.uint8Array({ minLength: 1, maxLength: 64 }), (id, value, key) => {
        const secret = `whsec_${Buffer.from(key).toString('base64')}`;
        const body = JSON.stringify(value) ?? 'null';
        const timestamp = nowSeconds();
        const signature = signatureHeader(id, timestamp, body, [secret]);
        expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        expect(() => new Webhook(secret).verify(body, headers(id, timestamp, signature))).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  it('matches what the standardwebhooks package signs', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const body = '{"type":"task.completed"}';
    expect(signatureHeader('msg_1', timestamp, body, [secret])).toBe(
      new Webhook(secret).sign('msg_1', new Date(timestamp * 1000), body),
    );
  });

  it('fails verification for another body, id, timestamp or secret', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const body = '{"a":1}';
    const signature = signatureHeader('msg_1', timestamp, body, [secret]);
    const hook = new Webhook(secret);
    expect(() => hook.verify('{"a":2}', headers('msg_1', timestamp, signature))).toThrow('No matching signature');
    expect(() => hook.verify(body, headers('msg_2', timestamp, signature))).toThrow('No matching signature');
    expect(() => hook.verify(body, headers('msg_1', timestamp - 1, signature))).toThrow('No matching signature');
    expect(() => new Webhook(newSecret()).verify(body, headers('msg_1', timestamp, signature))).toThrow(
      'No matching signature',
    );
  });

  it('signs with two secrets: two space-separated v1 entries, each verifying on its own', () => {
    const [oldSecret, newOne] = [newSecret(), newSecret()];
    const timestamp = nowSeconds();
    const body = '{"type":"task.cancelled"}';
    const signature = signatureHeader('msg_9', timestamp, body, [newOne, oldSecret]);
    const entries = signature.split(' ');
    expect(entries).toHaveLength(2);
    for (const entry of entries) expect(entry).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(entries[0]).not.toBe(entries[1]);
    for (const secret of [oldSecret, newOne]) {
      expect(() => new Webhook(secret).verify(body, headers('msg_9', timestamp, signature))).not.toThrow();
    }
    // Each entry alone is the single-secret signature.
    expect(entries).toEqual([
      signatureHeader('msg_9', timestamp, body, [newOne]),
      signatureHeader('msg_9', timestamp, body, [oldSecret]),
    ]);
    expect(() => new Webhook(newSecret()).verify(body, headers('msg_9', timestamp, signature))).toThrow();
  });
});

describe('nextDelaySeconds', () => {
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
          const delay = nextDelaySeconds(entries, failed, () => random);
          expect(delay).not.toBeNull();
          expect(delay).toBeGreaterThanOrEqual(base * 0.8 - 1e-9);
          expect(delay).toBeLessThanOrEqual(base * 1.2 + 1e-9);
        },
      ),
    );
  });

  it('reaches both ends of the jitter and uses the entry of the attempt that failed', () => {
    expect(nextDelaySeconds(schedule, 1, () => 0)).toBeCloseTo(4);
    expect(nextDelaySeconds(schedule, 1, () => 0.5)).toBeCloseTo(5);
    expect(nextDelaySeconds(schedule, 1, () => 0.999999)).toBeCloseTo(6, 4);
    expect(nextDelaySeconds(schedule, 2, () => 0.5)).toBeCloseTo(300);
    expect(nextDelaySeconds(schedule, 7, () => 0.5)).toBeCloseTo(36000);
  });

  it('answers null once the schedule is exhausted', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1000), { maxLength: 10 }), fc.nat(10), (entries, extra) => {
        expect(nextDelaySeconds(entries, entries.length + 1 + extra)).toBeNull();
      }),
    );
    expect(nextDelaySeconds(schedule, 8)).toBeNull();
    expect(nextDelaySeconds([0.2, 0.2, 0.2], 4)).toBeNull();
  });
});

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

describe('classify', () => {
  const cases: Array<[number | null, ReturnType<typeof classify>]> = [
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [410, 'gone'],
    [null, 'retry'],
    [100, 'retry'],
    [199, 'retry'],
    [300, 'retry'],
    [301, 'retry'],
    [302, 'retry'],
    [304, 'retry'],
    [400, 'retry'],
    [404, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
  ];
  it.each(cases)('%j → %s', (status, expected) => {
    expect(classify(status)).toBe(expected);
  });
});

describe('ANNOUNCED_STATUSES', () => {
  it('announces exactly awaiting_input, completed, failed and cancelled', () => {
    expect([...ANNOUNCED_STATUSES].sort()).toEqual(['awaiting_input', 'cancelled', 'completed', 'failed']);
  });
});
