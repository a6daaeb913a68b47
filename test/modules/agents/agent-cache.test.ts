import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChangeCache } from '../../../src/db/change-cache.js';
import SqliteDatabase from '../../../src/db/sqlite-driver.js';
import { AppError } from '../../../src/http/errors.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createAgentsModule } from '../../../src/modules/agents/agents-module.js';
import { type AgentRow, agentsRepo } from '../../../src/modules/agents/agents-repo.js';
import { createAgentsService } from '../../../src/modules/agents/agents-service.js';
import { registeredRuntimeSchemas } from '../../../src/modules/runtimes/adapters.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { actingAs, createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { workerHeaders } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';

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

const submit = (t: TestApp, user: TestUser, agentUuid: string) => () =>
  call(t.app, 'POST', `/agent/request/${agentUuid}`, { headers: workerHeaders(user), body: { message: 'hi' } });
const claim = (t: TestApp, user: TestUser, agentUuid: string) => () =>
  call(t.app, 'POST', `/agent/${agentUuid}/tasks/claim`, { headers: workerHeaders(user), body: {} });

/** The agents service as a process without a server runs it (the CLI's way): no cache, no listener. */
function serverless(t: TestApp) {
  const box = createSecretBox(t.runtime.secrets.encryptionKey);
  return createAgentsModule({
    runtime: t.runtime,
    box,
    runtimeSchemas: registeredRuntimeSchemas(),
    checkRuntime: async () => undefined,
    cacheMs: 0,
    events: createEventHub(),
  }).service;
}

// Two instances on one database, as in a deployment with several servers. Each caches agents for
// a minute: only an announcement of the change can make the next request see it in time.
describe.each(DATABASES)('agent cache across two instances on $name', (database) => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await buildTestApp(database, { config: { agentCacheMs: 60_000 } });
    b = await buildTestApp(database, { config: { dataDir: a.config.dataDir, agentCacheMs: 60_000 } });
    if (database.name === 'postgres') await sleep(200); // both listeners connected
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('an agent paused through the API refuses submits at once there and within a second on the other', async () => {
    const user = await createUser(a);
    const agent = await createAgent(a, user);
    for (const t of [a, b]) expect((await submit(t, user, agent.uuid)()).statusCode).toBe(202);
    const paused = await call(a.app, 'PATCH', `/agent/${agent.uuid}`, {
      token: user.token,
      body: { status: 'paused' },
    });
    expect(paused.statusCode).toBe(200);
    const refused = await submit(a, user, agent.uuid)();
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('AGENT_UNAVAILABLE');
    expect(await until(submit(b, user, agent.uuid), 503)).toBeGreaterThanOrEqual(0);

    // And back: active again on the other instance, both accept at once / within the bound.
    const resumed = await call(b.app, 'PATCH', `/agent/${agent.uuid}`, {
      token: user.token,
      body: { status: 'active' },
    });
    expect(resumed.statusCode).toBe(200);
    expect((await submit(b, user, agent.uuid)()).statusCode).toBe(202);
    expect(await until(submit(a, user, agent.uuid), 202)).toBeGreaterThanOrEqual(0);
  });

  it('a webhook delivery sees its agent paused on either instance', async () => {
    const user = await createUser(a);
    const agent = await createAgent(a, user);
    const trigger = await createTrigger(a, user, agent.uuid);
    const send = (t: TestApp) => () =>
      deliver(t, trigger.uuid, { secret: trigger.webhook_secret, body: { repository: { name: 'r' } } });
    for (const t of [a, b]) expect((await send(t)()).statusCode).toBe(202);
    const paused = await call(b.app, 'PATCH', `/agent/${agent.uuid}`, {
      token: user.token,
      body: { status: 'paused' },
    });
    expect(paused.statusCode).toBe(200);
    const refused = await send(b)();
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('AGENT_UNAVAILABLE');
    expect(await until(send(a), 503)).toBeGreaterThanOrEqual(0);
  });

  it('an agent deleted on one instance is gone for submits and claims at once there and soon on the other', async () => {
    const user = await createUser(a);
    const agent = await createAgent(a, user);
    for (const t of [a, b]) {
      expect((await submit(t, user, agent.uuid)()).statusCode).toBe(202);
      expect((await claim(t, user, agent.uuid)()).statusCode).toBe(200);
    }
    expect((await call(b.app, 'DELETE', `/agent/${agent.uuid}`, { token: user.token })).statusCode).toBe(204);
    expect((await submit(b, user, agent.uuid)()).statusCode).toBe(404);
    expect((await claim(b, user, agent.uuid)()).statusCode).toBe(404);
    expect(await until(submit(a, user, agent.uuid), 404)).toBeGreaterThanOrEqual(0);
    expect((await claim(a, user, agent.uuid)()).statusCode).toBe(404);
  });

  it('a change made outside any server (the CLI) reaches every instance', async () => {
    const user = await createUser(a);
    const agent = await createAgent(a, user);
    const read = (t: TestApp) => () => call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token });
    for (const t of [a, b]) {
      expect((await submit(t, user, agent.uuid)()).statusCode).toBe(202);
      expect((await read(t)()).json().name).toBe('test agent');
    }
    await serverless(a).patch(actingAs(user), agent.uuid, { name: 'renamed', status: 'stopped' });
    for (const t of [a, b]) {
      expect(await until(submit(t, user, agent.uuid), 503)).toBeGreaterThanOrEqual(0);
      expect((await read(t)()).json().name).toBe('renamed');
    }
    await serverless(b).remove(actingAs(user), agent.uuid);
    for (const t of [a, b]) expect(await until(read(t), 404)).toBeGreaterThanOrEqual(0);
  });

  it.runIf(database.name === 'sqlite')(
    'a write by another process on the SQLite file (no announcement at all) empties the cache',
    async () => {
      const user = await createUser(a);
      const agent = await createAgent(a, user);
      for (const t of [a, b]) expect((await submit(t, user, agent.uuid)()).statusCode).toBe(202);
      const other = new SqliteDatabase(path.join(a.config.dataDir, 'taskhook.sqlite'));
      try {
        other.pragma('busy_timeout = 5000');
        other.prepare(`update agents set status = 'paused' where uuid = ?`).run(agent.uuid);
      } finally {
        other.close();
      }
      for (const t of [a, b]) expect(await until(submit(t, user, agent.uuid), 503)).toBeGreaterThanOrEqual(0);
    },
  );
});

describe.each(DATABASES)('agents service with a listening cache on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t?.close());

  function counted(ttlMs: number, now: () => number) {
    const calls = { reads: 0 };
    const cache = createChangeCache<AgentRow>({ ttlMs, now });
    cache.setListening(true);
    const service = createAgentsService({
      db: t.runtime.db,
      repo: {
        ...agentsRepo,
        findOwned: (...args: Parameters<typeof agentsRepo.findOwned>) => {
          calls.reads++;
          return agentsRepo.findOwned(...args);
        },
      },
      cache,
      clock: t.runtime.clock,
      events: createEventHub(),
      checkRuntime: async () => undefined,
      box: createSecretBox(t.runtime.secrets.encryptionKey),
    });
    return { calls, cache, service };
  }

  it('reads an agent once while listening, again after expiry, a change, or while not listening', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    let now = Date.now();
    const { calls, cache, service } = counted(1000, () => now);
    for (let i = 0; i < 5; i++) expect((await service.requireOwned(user.uuid, agent.uuid)).uuid).toBe(agent.uuid);
    expect(calls.reads).toBe(1);
    now += 1001;
    await service.requireOwned(user.uuid, agent.uuid);
    expect(calls.reads).toBe(2);
    cache.invalidate(agent.uuid);
    await service.requireOwned(user.uuid, agent.uuid);
    expect(calls.reads).toBe(3);
    cache.setListening(false); // connection lost: every request reads the agent
    await service.requireOwned(user.uuid, agent.uuid);
    await service.requireOwned(user.uuid, agent.uuid);
    expect(calls.reads).toBe(5);
  });

  it("answers NOT_FOUND for another user's cached agent, and its own patch is seen at once", async () => {
    const [owner, stranger] = [await createUser(t), await createUser(t)];
    const agent = await createAgent(t, owner);
    const { calls, service } = counted(60_000, () => Date.now());
    await service.requireOwned(owner.uuid, agent.uuid);
    const refused = await service.requireOwned(stranger.uuid, agent.uuid).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('NOT_FOUND');
    expect(calls.reads).toBe(1);
    await service.patch(actingAs(owner), agent.uuid, { status: 'paused' });
    expect((await service.requireOwned(owner.uuid, agent.uuid)).status).toBe('paused');
    await service.remove(actingAs(owner), agent.uuid);
    await expect(service.requireOwned(owner.uuid, agent.uuid)).rejects.toThrow(AppError);
  });

  it('never caches a read that a change overtook', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const { calls, cache, service } = counted(60_000, () => Date.now());
    const pending = service.requireOwned(user.uuid, agent.uuid);
    cache.invalidate(agent.uuid); // arrives while the read is in flight
    await pending;
    await service.requireOwned(user.uuid, agent.uuid);
    expect(calls.reads).toBe(2);
  });
});
