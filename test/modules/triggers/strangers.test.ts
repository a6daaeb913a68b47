import { randomInt } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { expectErrorEnvelope, expectFlatError } from '../../helpers/routes.js';
import { type CreatedTrigger, createTrigger, deliver } from '../../helpers/triggers.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const redisUrl = process.env.TEST_REDIS_URL;

/** A documentation-range IPv6 address no other test uses. */
function uniqueAddress(): string {
  const part = () => randomInt(0x10000).toString(16);
  return `2001:db8:${part()}:${part()}::${part()}`;
}

/**
 * A clock at the start of a minute about a day ahead of real time (a random one), so the shared
 * PostgreSQL and Redis counters of these windows hold nothing but this file's requests.
 */
function futureClock() {
  return manualClock((Math.floor(Date.now() / MINUTE) + 1_440 + randomInt(10_000)) * MINUTE);
}

const STORES: Array<{ name: string; database: (typeof DATABASES)[number]; config: Partial<Config> }> = [
  ...DATABASES.map((database) => ({ name: `${database.name} store`, database, config: {} })),
  ...(redisUrl && DATABASES[0] ? [{ name: 'redis store', database: DATABASES[0], config: { redisUrl } }] : []),
];

const limits = (res: LightMyRequestResponse) => ({
  limit: Number(res.headers['x-ratelimit-limit']),
  remaining: Number(res.headers['x-ratelimit-remaining']),
});

describe.each(STORES)('a stranger at a trigger address, rate limit on the $name', ({ database, config }) => {
  const LIMIT = 10;
  const clock = futureClock();
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { ...config, rateLimit: LIMIT } });
  });
  afterAll(() => t.close());

  it('1,001 POSTs without the right secret count against their address: the real sender is still accepted', async () => {
    const user = await createUser(t);
    const trigger = await createTrigger(t, user, (await createAgent(t, user)).uuid);
    // A fresh window: the owner's setup requests above are not in it (a delivery that passes the
    // check counts in the owner's window too, and the headers show the tighter one).
    clock.set((Math.floor(clock.now() / MINUTE) + 1) * MINUTE);
    const address = uniqueAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 1_001; i++) {
      const kind = i % 3;
      const res = await deliver(t, trigger.uuid, {
        body: { n: i },
        remoteAddress: address,
        ...(kind === 0 ? { secret: 'whs_wrong' } : kind === 1 ? { signature: `sha256=${'0'.repeat(64)}` } : {}),
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, LIMIT).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(LIMIT).every((s) => s === 429)).toBe(true);

    // The real sender, from the very same address, signs its body: its own window is untouched.
    const body = JSON.stringify({ n: 'real' });
    const real = await deliver(t, trigger.uuid, {
      body,
      signature: await sign(trigger.webhook_secret, body),
      remoteAddress: address,
    });
    expect(real.statusCode, real.body).toBe(202);
    expect(limits(real)).toEqual({ limit: LIMIT, remaining: LIMIT - 1 });
    const secretOnly = await deliver(t, trigger.uuid, { body: {}, secret: trigger.webhook_secret });
    expect(secretOnly.statusCode, secretOnly.body).toBe(202);
    expect(limits(secretOnly)).toEqual({ limit: LIMIT, remaining: LIMIT - 2 });

    // And the stranger's address stays limited.
    expectErrorEnvelope(await deliver(t, trigger.uuid, { body: {}, remoteAddress: address }), 429, 'RATE_LIMITED');
  }, 180_000);

  it('a body refused before it is read still counts against the client address, with the headers', async () => {
    const user = await createUser(t);
    const trigger = await createTrigger(t, user, (await createAgent(t, user)).uuid);
    const address = uniqueAddress();
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/webhooks/triggers/${trigger.uuid}`,
      headers: { 'content-type': 'application/json', 'x-webhook-secret': trigger.webhook_secret },
      payload: Buffer.alloc(t.config.maxBodyBytes + 1, 32),
      remoteAddress: address,
    });
    expect(res.statusCode).toBe(413);
    expect(limits(res)).toEqual({ limit: LIMIT, remaining: LIMIT - 1 });
  });
});

describe.each(DATABASES)('refused deliveries in the log on $name', (database) => {
  const clock = futureClock();
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { metrics: true } });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  async function logged(trigger: CreatedTrigger) {
    const res = await call(t.app, 'GET', `/v1/agent/${trigger.agent_uuid}/triggers/${trigger.uuid}/deliveries`, {
      headers: { 'x-api-key': user.key },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as {
      deliveries: Array<{ status_code: number; error: string | null }>;
      pagination: { total: number };
    };
  }

  async function unloggedMetric(): Promise<number> {
    const text = (await call(t.app, 'GET', '/metrics')).body;
    const line = text.split('\n').find((l) => l.startsWith('taskhook_webhook_refusals_unlogged_total '));
    return Number(line?.split(' ')[1]);
  }

  const bad = (trigger: CreatedTrigger, i: number) =>
    deliver(t, trigger.uuid, {
      body: { i },
      remoteAddress: uniqueAddress(),
      ...(i % 2 === 0 ? { secret: `whs_guess_${i}` } : {}),
    });

  it('keeps at most 100 refusals for a bad secret per trigger per hour; the rest are only counted', async () => {
    const trigger = await createTrigger(t, user, (await createAgent(t, user)).uuid);
    const before = await unloggedMetric();
    for (let i = 0; i < 90; i++) expect((await bad(trigger, i)).statusCode).toBe(401);
    // The last ten places are taken by twenty at once: exactly ten get in.
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => bad(trigger, 90 + i)));
    for (const res of burst) expectFlatError(res, 401, expect.stringMatching(/^(Webhook|Invalid webhook)/));
    const log = await logged(trigger);
    expect(log.pagination.total).toBe(100);
    expect(log.deliveries.every((d) => d.status_code === 401)).toBe(true);
    expect((await unloggedMetric()) - before).toBe(10);

    // Refusals of a sender that knows the secret are not capped: they are the owner's to see.
    const wrongType = await deliver(t, trigger.uuid, {
      body: 'x',
      contentType: 'text/plain',
      secret: trigger.webhook_secret,
    });
    expect(wrongType.statusCode).toBe(415);
    expect((await logged(trigger)).pagination.total).toBe(101);
    // Another trigger has its own 100.
    const other = await createTrigger(t, user, trigger.agent_uuid);
    expect((await bad(other, 0)).statusCode).toBe(401);
    expect((await logged(other)).pagination.total).toBe(1);

    // An hour after the first ones, refusals are logged again.
    clock.advance(HOUR + 1_000);
    expect((await bad(trigger, 200)).statusCode).toBe(401);
    expect((await logged(trigger)).pagination.total).toBe(102);
    expect((await unloggedMetric()) - before).toBe(10);
  });
});
