import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChangeCache } from '../../../src/db/change-cache.js';
import SqliteDatabase from '../../../src/db/sqlite-driver.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createAgentsModule } from '../../../src/modules/agents/agents-module.js';
import { agentsRepo } from '../../../src/modules/agents/agents-repo.js';
import { registeredRuntimeSchemas } from '../../../src/modules/runtimes/adapters.js';
import { type TriggerRow, triggersRepo } from '../../../src/modules/triggers/triggers-repo.js';
import { createTriggersService } from '../../../src/modules/triggers/triggers-service.js';
import { createWebhookService } from '../../../src/modules/triggers/webhook-service.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { actingAs, createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { workerHeaders } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, deliver } from '../../helpers/triggers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Repeats `send` until it answers `status`; returns how long that took (ms), or -1 after `limitMs`. */
async function until(send: () => Promise<LightMyRequestResponse>, status: number, limitMs = 1000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started <= limitMs) {
    if ((await send()).statusCode === status) return Date.now() - started;
    await sleep(10);
  }
  return -1;
}

const BODY = { repository: { name: 'r' } };

/** The triggers service as a process without a server runs it (the CLI's way): no cache, no listener. */
function serverless(t: TestApp) {
  const box = createSecretBox(t.runtime.secrets.encryptionKey);
  const agents = createAgentsModule({
    runtime: t.runtime,
    box,
    runtimeSchemas: registeredRuntimeSchemas(),
    checkRuntime: async () => undefined,
    cacheMs: 0,
    events: createEventHub(),
  });
  return createTriggersService({
    db: t.runtime.db,
    repo: triggersRepo,
    cache: createChangeCache<TriggerRow>({ ttlMs: 0, now: () => t.runtime.clock.now() }),
    agents: agents.service,
    agentsRepo,
    box,
    clock: t.runtime.clock,
    publicUrl: t.config.publicUrl,
  });
}

// Two instances on one database, as in a deployment with several servers. Each caches triggers
// (and agents) for a minute: only an announcement of the change can make the next delivery see it.
describe.each(DATABASES)('trigger cache across two instances on $name', (database) => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    const config = { agentCacheMs: 60_000, triggerCacheMs: 60_000 };
    a = await buildTestApp(database, { config });
    b = await buildTestApp(database, { config: { ...config, dataDir: a.config.dataDir } });
    if (database.name === 'postgres') await sleep(200); // both listeners connected
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function setup(): Promise<{ user: TestUser; agent: string; trigger: CreatedTrigger }> {
    const user = await createUser(a);
    const agent = (await createAgent(a, user)).uuid;
    const trigger = await createTrigger(a, user, agent);
    return { user, agent, trigger };
  }
  const send = (t: TestApp, trigger: string, secret: string) => () => deliver(t, trigger, { secret, body: BODY });
  const manage = (t: TestApp, user: TestUser, method: 'PATCH' | 'DELETE' | 'POST', url: string, body?: object) =>
    call(t.app, method, url, { headers: workerHeaders(user), ...(body ? { body } : {}) });

  it('a rotated secret opens the trigger at once there and soon on the other; the one before the last is refused', async () => {
    const { user, agent, trigger } = await setup();
    const first = trigger.webhook_secret;
    for (const t of [a, b]) expect((await send(t, trigger.uuid, first)()).statusCode).toBe(202);
    const rotate = (t: TestApp) => manage(t, user, 'POST', `/v1/agent/${agent}/triggers/${trigger.uuid}/rotate_secret`);
    const second = (await rotate(a)).json().webhook_secret as string;
    expect((await send(a, trigger.uuid, second)()).statusCode).toBe(202);
    expect(await until(send(b, trigger.uuid, second), 202)).toBeGreaterThanOrEqual(0);
    // The previous secret keeps working for 24 h (documented); a second rotation retires the first.
    for (const t of [a, b]) expect((await send(t, trigger.uuid, first)()).statusCode).toBe(202);
    const third = (await rotate(b)).json().webhook_secret as string;
    const refused = await send(b, trigger.uuid, first)();
    expect(refused.statusCode).toBe(401);
    expect((await send(b, trigger.uuid, third)()).statusCode).toBe(202);
    expect(await until(send(a, trigger.uuid, first), 401)).toBeGreaterThanOrEqual(0);
    expect((await send(a, trigger.uuid, third)()).statusCode).toBe(202);
  });

  it('a disabled trigger is refused at once there and soon on the other, and accepted again once enabled', async () => {
    const { user, agent, trigger } = await setup();
    const deliverTo = (t: TestApp) => send(t, trigger.uuid, trigger.webhook_secret);
    for (const t of [a, b]) expect((await deliverTo(t)()).statusCode).toBe(202);
    const url = `/v1/agent/${agent}/triggers/${trigger.uuid}`;
    expect((await manage(b, user, 'PATCH', url, { enabled: false })).statusCode).toBe(200);
    const refused = await deliverTo(b)();
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('TRIGGER_DISABLED');
    expect(await until(deliverTo(a), 403)).toBeGreaterThanOrEqual(0);

    expect((await manage(a, user, 'PATCH', url, { enabled: true })).statusCode).toBe(200);
    expect((await deliverTo(a)()).statusCode).toBe(202);
    expect(await until(deliverTo(b), 202)).toBeGreaterThanOrEqual(0);
  });

  it('a deleted trigger, or one whose agent was deleted, is unknown at once there and soon on the other', async () => {
    const one = await setup();
    const two = await setup();
    for (const { trigger } of [one, two]) {
      for (const t of [a, b]) expect((await send(t, trigger.uuid, trigger.webhook_secret)()).statusCode).toBe(202);
    }
    const url = `/v1/agent/${one.agent}/triggers/${one.trigger.uuid}`;
    expect((await manage(a, one.user, 'DELETE', url)).statusCode).toBe(204);
    const gone = await send(a, one.trigger.uuid, one.trigger.webhook_secret)();
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.message).toBe('Trigger not found');
    expect(await until(send(b, one.trigger.uuid, one.trigger.webhook_secret), 404)).toBeGreaterThanOrEqual(0);

    expect((await call(b.app, 'DELETE', `/agent/${two.agent}`, { token: two.user.token })).statusCode).toBe(204);
    const orphan = await send(b, two.trigger.uuid, two.trigger.webhook_secret)();
    expect(orphan.statusCode).toBe(404);
    expect(orphan.json().error.message).toBe('Trigger not found');
    const elsewhere = send(a, two.trigger.uuid, two.trigger.webhook_secret);
    expect(await until(elsewhere, 404)).toBeGreaterThanOrEqual(0);
    expect((await elsewhere()).json().error.message).toBe('Trigger not found');
  });

  it('a change made outside any server (the CLI) reaches every instance', async () => {
    const { user, agent, trigger } = await setup();
    for (const t of [a, b]) expect((await send(t, trigger.uuid, trigger.webhook_secret)()).statusCode).toBe(202);
    await serverless(a).patch(actingAs(user), agent, trigger.uuid, { enabled: false });
    for (const t of [a, b]) {
      expect(await until(send(t, trigger.uuid, trigger.webhook_secret), 403)).toBeGreaterThanOrEqual(0);
    }
    await serverless(b).remove(actingAs(user), agent, trigger.uuid);
    for (const t of [a, b]) {
      expect(await until(send(t, trigger.uuid, trigger.webhook_secret), 404)).toBeGreaterThanOrEqual(0);
    }
  });

  it.runIf(database.name === 'sqlite')(
    'a write by another process on the SQLite file (no announcement at all) empties the cache',
    async () => {
      const { trigger } = await setup();
      for (const t of [a, b]) expect((await send(t, trigger.uuid, trigger.webhook_secret)()).statusCode).toBe(202);
      const other = new SqliteDatabase(path.join(a.config.dataDir, 'taskhook.sqlite'));
      try {
        other.pragma('busy_timeout = 5000');
        other.prepare('update triggers set enabled = 0 where uuid = ?').run(trigger.uuid);
      } finally {
        other.close();
      }
      for (const t of [a, b]) {
        expect(await until(send(t, trigger.uuid, trigger.webhook_secret), 403)).toBeGreaterThanOrEqual(0);
      }
    },
  );
});

describe.each(DATABASES)('webhook lookup with a listening trigger cache on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t?.close());

  function counted(ttlMs: number, now: () => number) {
    const calls = { reads: 0 };
    const cache = createChangeCache<TriggerRow>({ ttlMs, now });
    cache.setListening(true);
    const service = createWebhookService({
      db: t.runtime.db,
      repo: {
        ...triggersRepo,
        findByUuid: (...args: Parameters<typeof triggersRepo.findByUuid>) => {
          calls.reads++;
          return triggersRepo.findByUuid(...args);
        },
      },
      cache,
      agents: { requireOwned: async () => Promise.reject(new Error('not used')) },
      tasks: {
        prepare: async () => Promise.reject(new Error('not used')),
        insert: async () => undefined,
        insertMany: async () => undefined,
      },
      box: createSecretBox(t.runtime.secrets.encryptionKey),
      clock: t.runtime.clock,
    });
    return { calls, cache, service };
  }

  it('reads a trigger once while listening, again after expiry, a change, or while not listening', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const trigger = await createTrigger(t, user, agent.uuid);
    let now = Date.now();
    const { calls, cache, service } = counted(1000, () => now);
    for (let i = 0; i < 5; i++) expect((await service.lookup(trigger.uuid))?.uuid).toBe(trigger.uuid);
    expect(calls.reads).toBe(1);
    now += 1001;
    await service.lookup(trigger.uuid);
    expect(calls.reads).toBe(2);
    cache.invalidate(trigger.uuid);
    await service.lookup(trigger.uuid);
    expect(calls.reads).toBe(3);
    cache.setListening(false); // connection lost: every delivery reads the trigger
    await service.lookup(trigger.uuid);
    await service.lookup(trigger.uuid);
    expect(calls.reads).toBe(5);
  });

  it('never caches an unknown address, nor a read that a change overtook', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const trigger = await createTrigger(t, user, agent.uuid);
    const { calls, cache, service } = counted(60_000, () => Date.now());
    const unknown = '01a2049f-2cb8-78b1-848a-c9006eae96d9';
    expect(await service.lookup(unknown)).toBeUndefined();
    expect(await service.lookup(unknown)).toBeUndefined();
    expect(calls.reads).toBe(2);
    const pending = service.lookup(trigger.uuid);
    cache.invalidate(trigger.uuid); // arrives while the read is in flight
    await pending;
    await service.lookup(trigger.uuid);
    expect(calls.reads).toBe(4);
  });
});
