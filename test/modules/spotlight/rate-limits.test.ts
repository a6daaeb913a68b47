import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, type TestDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi, USAGE } from '../../helpers/fake-openai.js';
import { createCredential, eventually } from '../../helpers/spotlight.js';

const MINUTE = 60_000;
const TOKENS = USAGE.prompt_tokens + USAGE.completion_tokens; // 18 per call of the fake upstream
const redisUrl = process.env.TEST_REDIS_URL;
const postgres = DATABASES.find((d) => d.name === 'postgres');

/**
 * A clock at the start of a minute far ahead of real time (a random hour of its own), so the
 * shared counters of PostgreSQL and Redis never hold another run's counts; `nextWindow` moves to
 * the start of the following minute, `at` to a second into the current one.
 */
function windowClock() {
  const offset = (1 + Math.floor(Math.random() * 1e6)) * 3_600_000;
  const clock = manualClock(Math.floor((Date.now() + offset) / MINUTE) * MINUTE + MINUTE);
  return Object.assign(clock, {
    nextWindow(): number {
      clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE);
      return clock.now();
    },
  });
}

const chatBody = { model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hi' }] };

function limitHeaders(res: LightMyRequestResponse) {
  return Object.fromEntries(
    Object.entries(res.headers).filter(([name]) => /^x-ratelimit-\w+-(requests|tokens)$/.test(name)),
  );
}

describe.each(DATABASES)('RPM and TPM limits of the model proxy on $name', (database) => {
  const clock = windowClock();
  let t: TestApp;
  let upstream: FakeOpenAi;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { clock, config: { allowPrivateUrls: true } });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  async function setup() {
    const user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    return user;
  }
  const chat = (token: string, headers: Record<string, string> = {}, body: unknown = chatBody) =>
    call(t.app, 'POST', '/spotlight/v1/chat/completions', { token, body, headers });
  const setKey = (user: TestUser, limits: { rpm?: number | null; tpm?: number | null }, keyUuid = user.keyUuid) =>
    call(t.app, 'PATCH', `/spotlight/rate_limits/platform_keys/${keyUuid}`, { token: user.token, body: limits });
  const setAgent = (user: TestUser, agentUuid: string, limits: { rpm?: number | null; tpm?: number | null }) =>
    call(t.app, 'PATCH', `/spotlight/rate_limits/agents/${agentUuid}`, { token: user.token, body: limits });
  const recorded = (user: TestUser) =>
    call(t.app, 'GET', '/spotlight/calls', { token: user.token }).then((r) => r.json().calls.length as number);
  async function taskOf(user: TestUser) {
    const agent = await createAgent(t, user);
    const res = await call(t.app, 'POST', `/agent/request/${agent.uuid}`, {
      token: user.token,
      body: { message: 'm' },
    });
    return { agent: agent.uuid, task: res.json().task_id as string };
  }

  it('reads, sets and lists limits; null removes one; keys cannot write; audited with the new values', async () => {
    const start = clock.nextWindow();
    const user = await setup();
    const empty = await call(t.app, 'GET', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.key,
    });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({
      scope: 'platform_key',
      id: user.keyUuid,
      limits: { rpm: null, tpm: null },
      window: {
        start: new Date(start).toISOString(),
        end: new Date(start + MINUTE).toISOString(),
        requests: 0,
        tokens: 0,
        remaining_requests: null,
        remaining_tokens: null,
      },
    });
    const set = await setKey(user, { rpm: 5 });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ limits: { rpm: 5, tpm: null }, window: { remaining_requests: 5 } });
    expect((await setKey(user, { tpm: 1000 })).json().limits).toEqual({ rpm: 5, tpm: 1000 });
    const { agent } = await taskOf(user);
    expect((await setAgent(user, agent, { rpm: 7 })).json()).toMatchObject({ scope: 'agent', id: agent });

    const list = await call(t.app, 'GET', '/spotlight/rate_limits', { token: user.token });
    expect(list.json().rate_limits.map((r: { scope: string; id: string }) => [r.scope, r.id])).toEqual([
      ['agent', agent],
      ['platform_key', user.keyUuid],
    ]);
    expect((await setKey(user, { rpm: null, tpm: null })).json().limits).toEqual({ rpm: null, tpm: null });
    const after = await call(t.app, 'GET', '/spotlight/rate_limits', { token: user.token });
    expect(after.json().rate_limits).toHaveLength(1);

    const byKey = await setKey(user, { rpm: null }).then(() =>
      call(t.app, 'PATCH', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
        token: user.key,
        body: { rpm: 1000 },
      }),
    );
    expect(byKey.statusCode).toBe(403);
    const other = await createUser(t);
    expect((await setKey(user, { rpm: 1 }, other.keyUuid)).statusCode).toBe(404);
    const unknownAgent = await setAgent(user, randomUUID(), { rpm: 1 });
    expect(unknownAgent.statusCode).toBe(404);
    expect(unknownAgent.json().error.code).toBe('NOT_FOUND');

    // Read from the table: the audit API keeps entries by real time, and this clock runs far ahead.
    const rows = await t.runtime.db.kysely
      .selectFrom('audit_log')
      .select(['target_type', 'target_uuid', 'details'])
      .where('workspace_uuid', '=', user.uuid)
      .where('action', '=', 'rate_limit.update')
      .execute();
    const entries = rows.map((r) => [
      { type: r.target_type, uuid: r.target_uuid },
      typeof r.details === 'string' ? JSON.parse(r.details) : r.details,
    ]);
    expect(entries).toContainEqual([
      { type: 'key', uuid: user.keyUuid },
      { rpm: 5, tpm: null },
    ]);
    expect(entries).toContainEqual([
      { type: 'key', uuid: user.keyUuid },
      { rpm: 5, tpm: 1000 },
    ]);
    expect(entries).toContainEqual([
      { type: 'agent', uuid: agent },
      { rpm: 7, tpm: null },
    ]);

    // Deleting an agent deletes its limits.
    await call(t.app, 'DELETE', `/agent/${agent}`, { token: user.token });
    expect((await call(t.app, 'GET', '/spotlight/rate_limits', { token: user.token })).json().rate_limits).toEqual([]);
  });

  it('admits rpm calls of a key a minute, then answers 429 rate_limit_exceeded, unrecorded, until the next minute', async () => {
    const user = await setup();
    await setKey(user, { rpm: 2 });
    clock.nextWindow();
    clock.advance(20_500);
    const first = await chat(user.key);
    expect(first.statusCode).toBe(200);
    expect(limitHeaders(first)).toEqual({
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '40s',
    });
    expect(limitHeaders(await chat(user.key))).toMatchObject({ 'x-ratelimit-remaining-requests': '0' });
    const before = upstream.seen.length;
    const calls = await recorded(user);

    const refused = await chat(user.key);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({
      error: {
        message: `Rate limit reached for platform key ${user.keyUuid} on requests per minute: limit 2, used 2. Try again in 40s.`,
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    expect(refused.headers['retry-after']).toBe('40');
    expect(refused.headers['x-taskhook-rate-limit-scope']).toBe('platform_key');
    expect(refused.headers['x-ratelimit-remaining-requests']).toBe('0');
    expect(refused.headers['x-taskhook-call-id']).toBeUndefined();
    const responses = await call(t.app, 'POST', '/spotlight/v1/responses', {
      token: user.key,
      body: { model: 'fake/gpt-4.1', input: 'hi' },
    });
    expect(responses.statusCode).toBe(429);
    expect(upstream.seen.length).toBe(before);
    expect(await recorded(user)).toBe(calls);
    // A refused call counts nothing.
    const window = await call(t.app, 'GET', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
    });
    expect(window.json().window).toMatchObject({ requests: 2, remaining_requests: 0 });

    // Sessions are in no key scope; the next minute admits the key again.
    expect((await chat(user.token)).statusCode).toBe(200);
    expect(limitHeaders(await chat(user.token))).toEqual({});
    clock.nextWindow();
    expect((await chat(user.key)).statusCode).toBe(200);
  });

  it('counts tokens once usage is known and refuses when the window holds tpm or more', async () => {
    const user = await setup();
    await setKey(user, { tpm: TOKENS + 2 });
    clock.nextWindow();
    const first = await chat(user.key);
    expect(limitHeaders(first)).toEqual({
      'x-ratelimit-limit-tokens': String(TOKENS + 2),
      'x-ratelimit-remaining-tokens': String(TOKENS + 2),
      'x-ratelimit-reset-tokens': '60s',
    });
    // Streamed calls add their usage too, before [DONE].
    const second = await chat(user.key, {}, { ...chatBody, stream: true });
    expect(second.statusCode).toBe(200);
    expect(second.headers['x-ratelimit-remaining-tokens']).toBe('2');
    const refused = await chat(user.key);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatchObject({
      type: 'tokens',
      message: `Rate limit reached for platform key ${user.keyUuid} on tokens per minute: limit ${TOKENS + 2}, used ${2 * TOKENS}. Try again in 60s.`,
    });
    const window = await call(t.app, 'GET', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
    });
    expect(window.json().window).toMatchObject({ requests: 0, tokens: 2 * TOKENS, remaining_tokens: 0 });
    clock.nextWindow();
    expect((await chat(user.key)).statusCode).toBe(200);
  });

  it('limits an agent’s attributed calls before the key’s, and shows the scope with fewer remaining', async () => {
    const user = await setup();
    const { agent, task } = await taskOf(user);
    await setAgent(user, agent, { rpm: 2 });
    await setKey(user, { rpm: 5 });
    clock.nextWindow();
    const attributed = { 'x-taskhook-task-id': task };
    const first = await chat(user.key, attributed);
    expect(first.headers).toMatchObject({ 'x-ratelimit-limit-requests': '2', 'x-ratelimit-remaining-requests': '1' });
    // Unattributed: the key alone (4 left after 2 calls counted).
    const plain = await chat(user.key);
    expect(plain.headers).toMatchObject({ 'x-ratelimit-limit-requests': '5', 'x-ratelimit-remaining-requests': '3' });
    expect((await chat(user.token, attributed)).statusCode).toBe(200);
    const refused = await chat(user.key, attributed);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['x-taskhook-rate-limit-scope']).toBe('agent');
    expect(refused.json().error.message).toContain(`for agent ${agent} on requests per minute: limit 2, used 2`);
    // The refusal took back the key's request too.
    const key = await call(t.app, 'GET', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
    });
    expect(key.json().window.requests).toBe(2);
    const agentWindow = await call(t.app, 'GET', `/spotlight/rate_limits/agents/${agent}`, { token: user.token });
    expect(agentWindow.json().window).toMatchObject({ requests: 2, remaining_requests: 0 });
  });

  it('admits exactly rpm of many concurrent calls', async () => {
    const user = await setup();
    await setKey(user, { rpm: 3 });
    clock.nextWindow();
    const answers = await Promise.all(Array.from({ length: 10 }, () => chat(user.key)));
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(3);
    expect(answers.filter((r) => r.statusCode === 429)).toHaveLength(7);
  });
});

describe.runIf(postgres)('RPM limits across two instances on one PostgreSQL database', () => {
  const database = postgres as TestDatabase;
  const clock = windowClock();
  let a: TestApp;
  let b: TestApp;
  let upstream: FakeOpenAi;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    [a, b] = await Promise.all([
      buildTestApp(database, { clock, config: { allowPrivateUrls: true } }),
      buildTestApp(database, { clock, config: { allowPrivateUrls: true } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await upstream.close();
  });

  it('share the counters: of concurrent calls on both, exactly rpm are admitted; a change reaches the other', async () => {
    const user = await createUser(a);
    await createCredential(a, user, { name: 'fake', base_url: upstream.baseUrl });
    await call(a.app, 'PATCH', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
      body: { rpm: 4 },
    });
    clock.nextWindow();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call((i % 2 ? a : b).app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body: chatBody }),
      ),
    );
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(4);
    const window = await call(b.app, 'GET', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
    });
    expect(window.json().window.requests).toBe(4);

    // Removed on a: b admits again once it has heard (a notification, well within a second).
    await call(a.app, 'PATCH', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
      token: user.token,
      body: { rpm: null },
    });
    await eventually(async () => {
      const res = await call(b.app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body: chatBody });
      return res.statusCode === 200 ? true : undefined;
    });
  });
});

describe.runIf(redisUrl).each(DATABASES)('RPM limits across two instances sharing Redis, $name storage', (database) => {
  const clock = windowClock();

  it('share the counters in Redis', async () => {
    const upstream = await startFakeOpenAi();
    const config = { allowPrivateUrls: true, redisUrl };
    const first = await buildTestApp(database, { clock, config });
    const second = await buildTestApp(database, { clock, config: { ...config, dataDir: first.config.dataDir } });
    try {
      const user = await createUser(first);
      await createCredential(first, user, { name: 'fake', base_url: upstream.baseUrl });
      await call(first.app, 'PATCH', `/spotlight/rate_limits/platform_keys/${user.keyUuid}`, {
        token: user.token,
        body: { rpm: 3 },
      });
      clock.nextWindow();
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call((i % 2 ? first : second).app, 'POST', '/spotlight/v1/chat/completions', {
            token: user.key,
            body: chatBody,
          }),
        ),
      );
      expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(3);
    } finally {
      await Promise.all([first.close(), second.close()]);
      await upstream.close();
    }
  }, 90_000);
});
