import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildTestApp, call, manualClock, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';

describe('TASKHOOK_TRUST_PROXY parsing', () => {
  const read = (value: string) => loadConfig({ TASKHOOK_TRUST_PROXY: value }).trustProxy;

  it('accepts false, true, a hop count, or addresses/CIDRs', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(read('false')).toBe(false);
    expect(read('true')).toBe(true);
    expect(read('2')).toBe(2);
    expect(read('127.0.0.1')).toEqual(['127.0.0.1']);
    expect(read(' 10.0.0.0/8, ::1 ,fd00::/8')).toEqual(['10.0.0.0/8', '::1', 'fd00::/8']);
  });

  it('refuses anything else, naming the variable', () => {
    for (const bad of ['proxy.example.com', '10.0.0.0/33', '::1/129', '10.0.0.0/8/1', '-1', '1.2.3']) {
      expect(() => read(bad)).toThrow(/TASKHOOK_TRUST_PROXY/);
    }
  });
});

describe.each(DATABASES)('trusted proxies decide the client address on $name', (database) => {
  /** Unauthenticated requests count against the client address: the 3rd from one address is 429. */
  async function statuses(t: TestApp, forwardedFor: string[]) {
    const out: number[] = [];
    for (const xff of forwardedFor) {
      out.push((await call(t.app, 'GET', '/no-such-path', { headers: { 'x-forwarded-for': xff } })).statusCode);
    }
    return out;
  }
  // A rate-limit window no other test run has used (PostgreSQL keeps the counters).
  const freshWindow = () => manualClock(Date.now() + Math.floor(Math.random() * 1e6) * 3_600_000);
  const SEQUENCE = ['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.2'];

  it.each([
    ['127.0.0.1', ['127.0.0.1']],
    ['127.0.0.0/8', ['127.0.0.0/8']],
    ['one hop', 1],
    ['two hops', 2],
    ['true', true],
  ])('reads X-Forwarded-For when the peer is trusted (%s)', async (_name, trustProxy) => {
    const t = await buildTestApp(database, { clock: freshWindow(), config: { rateLimit: 2, trustProxy } });
    try {
      expect(await statuses(t, SEQUENCE)).toEqual([404, 404, 429, 404]);
    } finally {
      await t.close();
    }
  });

  it.each([
    ['false', false],
    ['another network', ['10.0.0.0/8']],
  ])('ignores X-Forwarded-For when the peer is not trusted (%s)', async (_name, trustProxy) => {
    const t = await buildTestApp(database, { clock: freshWindow(), config: { rateLimit: 2, trustProxy } });
    try {
      expect(await statuses(t, SEQUENCE)).toEqual([404, 404, 429, 429]);
    } finally {
      await t.close();
    }
  });
});
