import { randomInt, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRateLimiter } from '../../src/http/rate-limit.js';
import { buildTestApp, manualClock, type TestApp } from '../helpers/app.js';
import { DATABASES, type TestDatabase } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';

const MINUTE = 60_000;
const LIMIT = 5;
const redisUrl = process.env.TEST_REDIS_URL;

if (!redisUrl && process.env.CI) {
  throw new Error('TEST_REDIS_URL is not set: in CI the Redis rate-limit tests must run');
}

/**
 * A clock at the start of a minute, one window ahead of real time, so the counts of this file
 * never share a window with other files' unauthenticated traffic. `nextWindow` moves to the start
 * of the following minute: each test counts in a window of its own.
 */
function windowClock() {
  // A minute far in the future of its own: on the shared PostgreSQL and Redis counters, the real
  // current minute is full of other test files' requests from 127.0.0.1.
  const offset = (1 + Math.floor(Math.random() * 1e6)) * 3_600_000;
  const clock = manualClock(Math.floor((Date.now() + offset) / MINUTE) * MINUTE + MINUTE);
  return Object.assign(clock, {
    nextWindow(): number {
      clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE);
      return clock.now();
    },
  });
}

/** A documentation-range IPv6 address no other test uses. */
function uniqueAddress(): string {
  const part = () => randomInt(0x10000).toString(16);
  return `2001:db8:${part()}:${part()}::${part()}`;
}

function get(
  t: TestApp,
  url: string,
  opts: { token?: string; headers?: Record<string, string>; address?: string } = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  return t.app.inject({ method: 'GET', url, headers, remoteAddress: opts.address ?? uniqueAddress() });
}

/** The three headers as numbers. */
function limits(res: LightMyRequestResponse) {
  return {
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    reset: Number(res.headers['x-ratelimit-reset']),
  };
}

function expectRateLimited(res: LightMyRequestResponse, retryAfter: number) {
  expect(res.statusCode).toBe(429);
  expect(res.headers['retry-after']).toBe(String(retryAfter));
  expect(limits(res).remaining).toBe(0);
  const body = res.json();
  expect(body).toEqual({
    success: false,
    error: { code: 'RATE_LIMITED', message: expect.any(String) },
    meta: { request_id: res.headers['x-request-id'], timestamp: expect.any(String) },
  });
}

describe.each(DATABASES)('rate limit on $name', (database) => {
  const clock = windowClock();
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { rateLimit: LIMIT } });
  });
  afterAll(() => t.close());

  it('lets one user make exactly 1,000 requests a minute; the 1,001st is 429 RATE_LIMITED with Retry-After', async () => {
    // Exact counts need every hit counted: on a loaded machine PostgreSQL can take longer than the
    // default second to answer a hit, which then passes uncounted (failing open, as designed).
    const big = await buildTestApp(database, {
      clock,
      config: { rateLimit: 1000, rateLimitStoreTimeoutMs: 60_000 },
    });
    try {
      expect(big.config.rateLimit).toBe(1000);
      const user = await createUser(big);
      const start = clock.nextWindow();
      const responses: LightMyRequestResponse[] = [];
      for (let sent = 0; sent < 1001; sent += 100) {
        const batch = Array.from({ length: Math.min(100, 1001 - sent) }, () =>
          get(big, '/agent/list', { token: user.token }),
        );
        responses.push(...(await Promise.all(batch)));
      }
      const ok = responses.filter((r) => r.statusCode === 200);
      const limited = responses.filter((r) => r.statusCode === 429);
      expect(ok).toHaveLength(1000);
      expect(limited).toHaveLength(1);
      // Every hit was counted once: the successes saw each remaining value exactly once.
      const remaining = ok.map((r) => limits(r).remaining).sort((a, b) => a - b);
      expect(remaining).toEqual(Array.from({ length: 1000 }, (_, i) => i));
      for (const r of responses) expect(limits(r)).toMatchObject({ limit: 1000, reset: start / 1000 + 60 });
      expectRateLimited(limited[0] as LightMyRequestResponse, 60);
      expectRateLimited(await get(big, '/agent/list', { token: user.token }), 60);
    } finally {
      await big.close();
    }
    // 1,001 requests, each counted in PostgreSQL on that run: over 30 s on a loaded CI machine.
  }, 120_000);

  it('sets X-RateLimit-* on every response, errors and 404s included; Reset is the end of the window', async () => {
    const user = await createUser(t);
    const address = uniqueAddress();
    const start = clock.nextWindow();
    const reset = start / 1000 + 60;
    const seen = [
      await get(t, '/agent/list', { token: user.token, address }),
      await get(t, `/agent/${randomUUID()}`, { token: user.token, address }),
      await get(t, '/agent/not-a-uuid', { token: user.key, address }),
    ];
    expect(seen.map((r) => r.statusCode)).toEqual([200, 404, 400]);
    expect(seen.map(limits)).toEqual([
      { limit: LIMIT, remaining: 4, reset },
      { limit: LIMIT, remaining: 3, reset },
      { limit: LIMIT, remaining: 2, reset },
    ]);
    // An unknown route has no credential mode: it is counted against the address.
    const unknown = await get(t, '/no-such-route', { token: user.token, address });
    expect(unknown.statusCode).toBe(404);
    expect(limits(unknown)).toEqual({ limit: LIMIT, remaining: 4, reset });

    clock.advance(45_500);
    expect(limits(await get(t, '/agent/list', { token: user.token }))).toEqual({ limit: LIMIT, remaining: 1, reset });
    expect(limits(await get(t, '/agent/list', { token: user.token }))).toEqual({ limit: LIMIT, remaining: 0, reset });
    const over = await get(t, '/agent/list', { token: user.token });
    expectRateLimited(over, 15);
    expect(limits(over).reset).toBe(reset);
  });

  it("counts all of a user's sessions and keys together, and each user separately", async () => {
    const alice = await createUser(t);
    const bob = await createUser(t);
    const address = uniqueAddress();
    clock.nextWindow();
    const credentials = [{ token: alice.token }, { token: alice.key }, { headers: { 'x-api-key': alice.key } }];
    for (let i = 0; i < LIMIT; i++) {
      const res = await get(t, '/agent/list', { ...credentials[i % 3], address });
      expect(res.statusCode).toBe(200);
      expect(limits(res).remaining).toBe(LIMIT - 1 - i);
    }
    for (const credential of credentials) {
      expectRateLimited(await get(t, '/agent/list', { ...credential, address }), 60);
    }
    const other = await get(t, '/agent/list', { token: bob.token, address });
    expect(other.statusCode).toBe(200);
    expect(limits(other).remaining).toBe(LIMIT - 1);
  });

  it('counts requests without credentials per client address', async () => {
    const [first, second] = [uniqueAddress(), uniqueAddress()];
    clock.nextWindow();
    for (let i = 0; i < LIMIT; i++) {
      const res = await get(t, i % 2 ? '/health' : '/no-such-route', { address: first });
      expect(limits(res).remaining).toBe(LIMIT - 1 - i);
    }
    expectRateLimited(await get(t, '/health', { address: first }), 60);
    expectRateLimited(await get(t, '/no-such-route', { address: first }), 60);
    const login = await t.app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email: 'nobody@example.test', password: 'whatever-it-is' },
      remoteAddress: first,
    });
    expectRateLimited(login, 60);

    const elsewhere = await get(t, '/health', { address: second });
    expect(elsewhere.statusCode).toBe(200);
    expect(limits(elsewhere).remaining).toBe(LIMIT - 1);
  });

  it('counts a failed authentication against the address, not the user', async () => {
    const user = await createUser(t);
    const address = uniqueAddress();
    clock.nextWindow();
    const failures = [
      { token: 'not-a-jwt' },
      // The last character changed (never to itself): the checksum no longer matches.
      { headers: { 'x-api-key': `${user.key.slice(0, -1)}${user.key.endsWith('x') ? 'y' : 'x'}` } },
      { token: tamperSignature(user.token) },
    ];
    for (const [i, credential] of failures.entries()) {
      const res = await get(t, '/agent/list', { ...credential, address });
      expect(res.statusCode).toBe(401);
      expect(limits(res).remaining).toBe(LIMIT - 1 - i);
    }
    const missing = await get(t, '/agent/list', { address });
    expect(missing.statusCode).toBe(401);
    expect(limits(missing).remaining).toBe(LIMIT - 4);

    const real = await get(t, '/agent/list', { token: user.token, address });
    expect(real.statusCode).toBe(200);
    expect(limits(real).remaining).toBe(LIMIT - 1);

    expect(limits(await get(t, '/health', { address })).remaining).toBe(0);
    // Once the address is spent, a bad credential learns only that it is rate limited.
    expectRateLimited(await get(t, '/agent/list', { token: 'not-a-jwt', address }), 60);
    const stillOk = await get(t, '/agent/list', { token: user.token, address });
    expect(stillOk.statusCode).toBe(200);
    expect(limits(stillOk).remaining).toBe(LIMIT - 2);
  });

  it('starts a new window at the next minute', async () => {
    const user = await createUser(t);
    const start = clock.nextWindow();
    for (let i = 0; i < LIMIT; i++) expect((await get(t, '/agent/list', { token: user.token })).statusCode).toBe(200);
    expectRateLimited(await get(t, '/agent/list', { token: user.token }), 60);
    clock.set(start + MINUTE - 1);
    expectRateLimited(await get(t, '/agent/list', { token: user.token }), 1);

    clock.set(start + MINUTE);
    const fresh = await get(t, '/agent/list', { token: user.token });
    expect(fresh.statusCode).toBe(200);
    expect(limits(fresh)).toEqual({ limit: LIMIT, remaining: LIMIT - 1, reset: start / 1000 + 120 });
  });
});

/** Sends `count` requests of `user` to `t` and returns the last response. */
async function spend(t: TestApp, user: TestUser, count: number): Promise<LightMyRequestResponse> {
  let last: LightMyRequestResponse | undefined;
  for (let i = 0; i < count; i++) last = await get(t, '/agent/list', { token: user.token });
  if (!last) throw new Error('spend needs a positive count');
  return last;
}

const postgres = DATABASES.find((d) => d.name === 'postgres');

/** The token with one character in the middle of its signature changed (never a no-op). */
function tamperSignature(token: string): string {
  const i = token.lastIndexOf('.') + 10;
  return `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
}

describe.runIf(postgres)('rate limit counters in PostgreSQL', () => {
  const database = postgres as TestDatabase;
  const clock = windowClock();
  const config = { rateLimit: LIMIT };

  it('are shared by instances on the same database', async () => {
    const [a, b] = await Promise.all([
      buildTestApp(database, { clock, config }),
      buildTestApp(database, { clock, config }),
    ]);
    try {
      const user = await createUser(a);
      clock.nextWindow();
      expect(limits(await spend(a, user, 2)).remaining).toBe(LIMIT - 2);
      expect(limits(await spend(b, user, 2)).remaining).toBe(LIMIT - 4);
      expect(limits(await spend(a, user, 1)).remaining).toBe(0);
      expectRateLimited(await get(b, '/agent/list', { token: user.token }), 60);
      const address = uniqueAddress();
      await get(a, '/health', { address });
      expect(limits(await get(b, '/health', { address })).remaining).toBe(LIMIT - 2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('survive closing an instance and building a new one', async () => {
    const before = await buildTestApp(database, { clock, config });
    const user = await createUser(before);
    clock.nextWindow();
    expect(limits(await spend(before, user, 3)).remaining).toBe(LIMIT - 3);
    await before.close();

    const after = await buildTestApp(database, { clock, config });
    try {
      expect(limits(await spend(after, user, 1)).remaining).toBe(LIMIT - 4);
      expect(limits(await spend(after, user, 1)).remaining).toBe(0);
      expectRateLimited(await get(after, '/agent/list', { token: user.token }), 60);
    } finally {
      await after.close();
    }
  });
});

describe('rate limit counters when their store is unreachable', () => {
  it('let requests through with the headers set rather than failing them', async () => {
    // A port nothing listens on: the Redis store fails on every hit.
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));

    const clock = windowClock();
    const t = await buildTestApp(DATABASES[0] as TestDatabase, {
      clock,
      config: { rateLimit: LIMIT, redisUrl: `redis://127.0.0.1:${port}/0` },
    });
    try {
      const user = await createUser(t);
      const start = clock.nextWindow();
      for (const res of [await get(t, '/health'), await get(t, '/agent/list', { token: user.token })]) {
        expect(res.statusCode, res.body).toBe(200);
        expect(limits(res)).toMatchObject({ limit: LIMIT, reset: start / 1000 + 60 });
        expect(Number.isInteger(limits(res).remaining)).toBe(true);
      }
    } finally {
      await t.close();
    }
  });
});

describe('a counter store that does not answer', () => {
  afterEach(() => vi.useRealTimers());

  async function settledAfter(hit: Promise<unknown>, ms: number): Promise<boolean> {
    let settled = false;
    void hit.then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(ms);
    return settled;
  }

  it('is waited for rateLimitStoreTimeoutMs, no longer; the request then passes uncounted and the error is reported', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    const hit = createRateLimiter({
      limit: 3,
      store: { hit: () => new Promise<number>(() => undefined) },
      clock: manualClock(120_000),
      storeTimeoutMs: 5_000,
      onStoreError: (err) => errors.push(err),
    });
    const result = hit('user:slow');
    expect(await settledAfter(result, 4_999)).toBe(false);
    expect(await settledAfter(result, 1)).toBe(true);
    expect(await result).toEqual({ limit: 3, remaining: 3, reset: 180, exceeded: false, retryAfter: 60 });
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('timed out');
  });

  it('counts a hit whose store answers just before the wait ends', async () => {
    vi.useFakeTimers();
    const hit = createRateLimiter({
      limit: 3,
      store: { hit: () => new Promise<number>((resolve) => setTimeout(() => resolve(4), 4_999)) },
      clock: manualClock(120_000),
      storeTimeoutMs: 5_000,
    });
    const result = hit('user:busy');
    expect(await settledAfter(result, 4_999)).toBe(true);
    expect(await result).toMatchObject({ remaining: 0, exceeded: true });
  });

  it('is waited for as long as the app is told (rateLimitStoreTimeoutMs), not the default second', async () => {
    // A Redis that accepts connections and never answers.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => sockets.add(socket)).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as net.AddressInfo;
    const t = await buildTestApp(DATABASES[0] as TestDatabase, {
      config: { rateLimit: LIMIT, redisUrl: `redis://127.0.0.1:${port}/0`, rateLimitStoreTimeoutMs: 5_000 },
    });
    try {
      let answered = false;
      const health = get(t, '/health').then((res) => {
        answered = true;
        return res;
      });
      // Past the default wait of one second, the request still waits for its count.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(answered).toBe(false);
      expect((await health).statusCode).toBe(200);
    } finally {
      await t.close();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe.runIf(redisUrl).each(DATABASES)('rate limit counters in Redis, $name storage', (database) => {
  const clock = windowClock();
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(redisUrl as string, { lazyConnect: true });
  });
  afterAll(() => redis.quit());

  it('are shared by instances that use the same Redis', async () => {
    // Both instances use one storage (the same SQLite file, or the PostgreSQL database), so they
    // know the same users; only Redis can make them share counters on SQLite.
    const first = await buildTestApp(database, { clock, config: { rateLimit: LIMIT, redisUrl } });
    const second = await buildTestApp(database, {
      clock,
      config: { rateLimit: LIMIT, redisUrl, dataDir: first.config.dataDir },
    });
    try {
      const user = await createUser(first);
      const start = clock.nextWindow();
      expect(limits(await spend(first, user, 2)).remaining).toBe(LIMIT - 2);
      expect(limits(await spend(second, user, 2)).remaining).toBe(LIMIT - 4);
      expect(limits(await spend(first, user, 1)).remaining).toBe(0);
      expectRateLimited(await get(second, '/agent/list', { token: user.token }), 60);
      expect(await redis.get(`taskhook:rl:${start / MINUTE}:user:${user.uuid}`)).toBe(String(LIMIT + 1));
      const ttl = await redis.ttl(`taskhook:rl:${start / MINUTE}:user:${user.uuid}`);
      expect(ttl).toBeGreaterThan(0);

      const address = uniqueAddress();
      await get(first, '/health', { address });
      expect(limits(await get(second, '/health', { address })).remaining).toBe(LIMIT - 2);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  }, 90_000);
});
