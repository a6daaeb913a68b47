import { describe, expect, it } from 'vitest';
import { parseCron } from '../../../src/modules/schedules/cron-fns.js';
import { checkTiming, latestUpTo, occurrencesAfter } from '../../../src/modules/schedules/occurrences-fns.js';
import { isZoneName, localTime } from '../../../src/modules/schedules/zone-fns.js';

function timing(cron: string, zone = 'UTC') {
  const parsed = parseCron(cron);
  if (!parsed.ok) throw new Error(parsed.reason);
  return { spec: parsed.spec, zone };
}
const at = (s: string) => Date.parse(s);
const isoAll = (xs: number[]) => xs.map((x) => new Date(x).toISOString());

describe('the DST rules (Europe/Berlin, 2026)', () => {
  it('a daily time in the spring gap fires once, at the transition instant', () => {
    const got = occurrencesAfter(timing('30 2 * * *', 'Europe/Berlin'), at('2026-03-28T12:00:00Z'), 3);
    expect(isoAll(got)).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    expect(localTime('Europe/Berlin', got[0] as number)).toBe('2026-03-29T03:00:00+02:00');
  });

  it('every half hour across the gap: the gap times and the transition are one occurrence', () => {
    const got = occurrencesAfter(timing('*/30 * * * *', 'Europe/Berlin'), at('2026-03-29T00:00:00Z'), 4);
    expect(isoAll(got)).toEqual([
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-29T02:00:00.000Z',
    ]);
  });

  it('a repeated daily time fires once, at its first instant', () => {
    const got = occurrencesAfter(timing('30 2 * * *', 'Europe/Berlin'), at('2026-10-24T12:00:00Z'), 2);
    expect(isoAll(got)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    expect(localTime('Europe/Berlin', got[0] as number)).toBe('2026-10-25T02:30:00+02:00');
  });

  it('every half hour across the repeat skips the second pass', () => {
    const got = occurrencesAfter(timing('*/30 * * * *', 'Europe/Berlin'), at('2026-10-24T23:59:00Z'), 4);
    expect(isoAll(got)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T02:30:00.000Z',
    ]);
    expect(localTime('Europe/Berlin', got[2] as number)).toBe('2026-10-25T03:00:00+01:00');
  });

  it('starting inside the second pass of the repeat finds the next time after it', () => {
    const got = occurrencesAfter(timing('*/30 * * * *', 'Europe/Berlin'), at('2026-10-25T01:15:00Z'), 1);
    expect(isoAll(got)).toEqual(['2026-10-25T02:00:00.000Z']);
  });

  it('a zone without DST and UTC have neither', () => {
    const tokyo = occurrencesAfter(timing('30 2 * * *', 'Asia/Tokyo'), at('2026-03-28T00:00:00Z'), 2);
    expect(isoAll(tokyo)).toEqual(['2026-03-28T17:30:00.000Z', '2026-03-29T17:30:00.000Z']);
    expect(localTime('UTC', at('2026-03-29T01:00:00Z'))).toBe('2026-03-29T01:00:00+00:00');
  });

  it('America/New_York: spring gap and autumn repeat', () => {
    const spring = occurrencesAfter(timing('30 2 * * *', 'America/New_York'), at('2026-03-08T00:00:00Z'), 1);
    expect(isoAll(spring)).toEqual(['2026-03-08T07:00:00.000Z']);
    const autumn = occurrencesAfter(timing('30 1 * * *', 'America/New_York'), at('2026-11-01T00:00:00Z'), 2);
    expect(isoAll(autumn)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });
});

describe('the grammar', () => {
  it.each([
    '* * * * *',
    '0 0 * * MON-FRI',
    '*/15 9-17 * * 1-5',
    '0 0 1,15 * *',
    '5/15 * * * *',
    '0 30 9 * * *',
    '\t0  0 * *  7 ',
    '@daily',
    '@Hourly',
    '0 0 1 jan sun',
  ])('accepts %j', (cron) => {
    expect(parseCron(cron).ok).toBe(true);
  });

  it.each([
    '',
    '* * * *',
    '* * * * * * *',
    '0 0 L * *',
    '0 0 ? * *',
    '0 0 * * 1#2',
    '0 0 1W * *',
    '@reboot',
    '@every 5m',
    '60 * * * *',
    '0 24 * * *',
    '0 0 0 * *',
    '0 0 * 13 *',
    '0 0 * * 8',
    '5-1 * * * *',
    '*/0 * * * *',
    '1,,2 * * * *',
    '1- * * * *',
  ])('refuses %j', (cron) => {
    expect(parseCron(cron).ok).toBe(false);
  });

  it('day fields: either matches when both are restricted, both must when one is *', () => {
    const either = occurrencesAfter(timing('0 0 1 * MON'), at('2026-06-01T00:00:00Z'), 3);
    expect(isoAll(either)).toEqual([
      '2026-06-08T00:00:00.000Z',
      '2026-06-15T00:00:00.000Z',
      '2026-06-22T00:00:00.000Z',
    ]);
    const firsts = occurrencesAfter(timing('0 0 1 * *'), at('2026-06-01T00:00:00Z'), 1);
    expect(isoAll(firsts)).toEqual(['2026-07-01T00:00:00.000Z']);
    const all = occurrencesAfter(timing('0 0 */1 * 1'), at('2026-06-01T00:00:00Z'), 2);
    expect(isoAll(all)).toEqual(['2026-06-02T00:00:00.000Z', '2026-06-03T00:00:00.000Z']);
    const sundays = occurrencesAfter(timing('0 0 * * 7'), at('2026-06-01T00:00:00Z'), 1);
    expect(isoAll(sundays)).toEqual(['2026-06-07T00:00:00.000Z']);
  });

  it('the minimum interval and the eight-year horizon', () => {
    const now = at('2026-06-01T00:00:00Z');
    expect(checkTiming('* * * * *', 'UTC', now, 60).ok).toBe(true);
    expect(checkTiming('*/30 * * * * *', 'UTC', now, 60).ok).toBe(false);
    expect(checkTiming('*/2 * * * * *', 'UTC', now, 1).ok).toBe(true);
    const feb30 = checkTiming('0 0 30 2 *', 'UTC', now, 60);
    expect(feb30).toMatchObject({ ok: false, field: 'cron' });
  });
});

describe('zones and the latest occurrence', () => {
  it('knows tz names and refuses offsets and unknown names', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/New_York', 'Etc/GMT+2']) expect(isZoneName(zone)).toBe(true);
    for (const zone of ['+02:00', 'CEST', 'Mars/Olympus', '', 'Europe/']) expect(isZoneName(zone)).toBe(false);
  });

  it('latestUpTo finds the most recent occurrence after a long outage', () => {
    const t = timing('0 3 * * *');
    expect(new Date(latestUpTo(t, at('2026-01-01T03:00:00Z'), at('2026-06-10T12:00:00Z'))).toISOString()).toBe(
      '2026-06-10T03:00:00.000Z',
    );
    const minutely = timing('* * * * *');
    expect(latestUpTo(minutely, at('2026-06-10T11:00:00Z'), at('2026-06-10T12:00:30Z'))).toBe(
      at('2026-06-10T12:00:00Z'),
    );
    expect(latestUpTo(minutely, at('2026-06-10T12:00:00Z'), at('2026-06-10T12:00:00Z'))).toBe(
      at('2026-06-10T12:00:00Z'),
    );
  });
});
