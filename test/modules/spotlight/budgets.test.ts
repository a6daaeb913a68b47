import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, listen } from '../../helpers/spotlight.js';

const messages = [{ role: 'user', content: 'hi' }];
/** gpt-4o at the shipped price, 11 tokens in and 7 out (the fake upstream's usage). */
const CALL_NANOS = 11 * 2.5 * 1000 + 7 * 10 * 1000;
const nanos = (usd: number) => Math.round(usd * 1e9);

describe.each(DATABASES)('model proxy budgets on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  const clock = manualClock(Date.parse('2026-03-15T12:00:00.000Z'));

  /** A user with a credential `fake` on the fake upstream. */
  async function setup(): Promise<TestUser> {
    const user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    return user;
  }
  const chat = (token: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    call(t.app, 'POST', '/spotlight/v1/chat/completions', {
      token,
      body: { model: 'fake/gpt-4o', messages, ...body },
      headers,
    });
  const patch = (user: TestUser, path: string, body: unknown, token = user.token) =>
    call(t.app, 'PATCH', `/spotlight/budgets/${path}`, { token, body });
  const get = (user: TestUser, path: string, token = user.token) =>
    call(t.app, 'GET', `/spotlight/budgets${path}`, { token });
  const records = async (user: TestUser, query = '') =>
    (await call(t.app, 'GET', `/spotlight/calls?limit=100${query}`, { token: user.token })).json().calls as Array<
      Record<string, unknown>
    >;
  const upstreamCalls = () => upstream.seen.filter((s) => s.path === '/chat/completions').length;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { clock, config: { allowPrivateUrls: true } });
    base = await listen(t);
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('answers the budget objects, and PATCH sets, keeps and removes limits rounded to the nano-dollar', async () => {
    const user = await setup();
    const account = await get(user, '/account');
    expect(account.statusCode).toBe(200);
    expect(account.json()).toEqual({
      scope: 'account',
      id: null,
      limits: { monthly_usd: null },
      windows: {
        month: {
          start: '2026-03-01T00:00:00.000Z',
          end: '2026-04-01T00:00:00.000Z',
          limit_usd: null,
          spent_usd: 0,
          remaining_usd: null,
          exceeded: false,
        },
      },
    });
    const set = await patch(user, 'account', { monthly_usd: 1.23456789012 });
    expect(set.statusCode).toBe(200);
    expect(set.json().limits).toEqual({ monthly_usd: 1.23456789 });
    expect(set.json().windows.month).toMatchObject({ limit_usd: 1.23456789, remaining_usd: 1.23456789 });
    expect((await patch(user, 'account', {})).json().limits).toEqual({ monthly_usd: 1.23456789 });
    expect((await patch(user, 'account', { monthly_usd: 1e-9 })).json().limits).toEqual({ monthly_usd: 1e-9 });
    expect((await patch(user, 'account', { monthly_usd: null })).json().limits).toEqual({ monthly_usd: null });

    const agent = await createAgent(t, user);
    const a = await patch(user, `agents/${agent.uuid}`, { daily_usd: 2 });
    expect(a.json()).toMatchObject({
      scope: 'agent',
      id: agent.uuid,
      limits: { daily_usd: 2, per_task_usd: null },
      windows: { day: { start: '2026-03-15T00:00:00.000Z', end: '2026-03-16T00:00:00.000Z', limit_usd: 2 } },
    });
    const b = await patch(user, `agents/${agent.uuid}`, { per_task_usd: 0.5 });
    expect(b.json().limits).toEqual({ daily_usd: 2, per_task_usd: 0.5 });
    const key = await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: 0 });
    expect(key.json()).toMatchObject({ scope: 'platform_key', id: user.keyUuid, limits: { monthly_usd: 0 } });
    expect(key.json().windows.month).toMatchObject({ exceeded: true, remaining_usd: 0 });

    const list = (await get(user, '')).json().budgets as Array<{ scope: string; id: string | null }>;
    expect(list.map((x) => [x.scope, x.id])).toEqual([
      ['account', null],
      ['agent', agent.uuid],
      ['platform_key', user.keyUuid],
    ]);
  });

  it('refuses bad limits with details.field, and other workspaces’ or unknown ids with 404', async () => {
    const user = await setup();
    const other = await setup();
    const agent = await createAgent(t, user);
    const cases: Array<[string, unknown, string]> = [
      ['account', { monthly_usd: '5' }, 'monthly_usd'],
      ['account', { monthly_usd: -1 }, 'monthly_usd'],
      ['account', { monthly_usd: 1_000_000.5 }, 'monthly_usd'],
      ['account', { daily_usd: 1 }, 'daily_usd'],
      ['account', { per_task_usd: 1 }, 'per_task_usd'],
      [`agents/${agent.uuid}`, { monthly_usd: 1 }, 'monthly_usd'],
      [`agents/${agent.uuid}`, { daily_usd: true }, 'daily_usd'],
      [`platform_keys/${user.keyUuid}`, { per_task_usd: 1 }, 'per_task_usd'],
    ];
    for (const [path, body, field] of cases) {
      const res = await patch(user, path, body);
      expect({ path, body, status: res.statusCode, field: res.json().error?.details?.field }).toEqual({
        path,
        body,
        status: 400,
        field,
      });
    }
    expect((await patch(user, 'account', { monthly_usd: 1_000_000 })).statusCode).toBe(200);
    const otherAgent = await createAgent(t, other);
    const otherTask = (
      await call(t.app, 'POST', `/agent/request/${otherAgent.uuid}`, { token: other.token, body: { message: 'm' } })
    ).json().task_id;
    for (const path of [
      `/agents/${otherAgent.uuid}`,
      `/agents/${randomUUID()}`,
      `/platform_keys/${other.keyUuid}`,
      `/platform_keys/${randomUUID()}`,
      `/tasks/${otherTask}`,
      `/tasks/${randomUUID()}`,
    ]) {
      expect({ path, status: (await get(user, path)).statusCode }).toEqual({ path, status: 404 });
      if (!path.startsWith('/tasks')) {
        const res = await patch(user, path.slice(1), {});
        expect({ path, status: res.statusCode }).toEqual({ path, status: 404 });
      }
    }
    // Writes take a session: a platform key gets 403 in the flat shape, and the limit is unchanged.
    const byKey = await patch(user, 'account', { monthly_usd: 0 }, user.key);
    expect({ status: byKey.statusCode, body: byKey.json() }).toEqual({
      status: 403,
      body: { error: 'This endpoint requires a user session' },
    });
    expect((await get(user, '/account', user.key)).json().limits).toEqual({ monthly_usd: 1_000_000 });
  });

  it('refuses a call over a reached limit before it goes upstream: 429, headers, and a record', async () => {
    const user = await setup();
    expect((await patch(user, 'account', { monthly_usd: 0 })).statusCode).toBe(200);
    const before = upstreamCalls();
    const res = await chat(user.key);
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({
      error: {
        message: 'Budget exceeded: account limit of 0 USD for this month reached (spent 0 USD)',
        type: 'insufficient_quota',
        param: null,
        code: 'budget_exceeded',
      },
    });
    expect(res.headers).toMatchObject({
      'x-taskhook-budget-scope': 'account',
      'x-taskhook-budget-limit-usd': '0',
      'x-taskhook-budget-spent-usd': '0',
      'x-should-retry': 'false',
      // 2026-03-15T12:00 → 2026-04-01T00:00.
      'retry-after': String(16.5 * 86_400),
    });
    expect(upstreamCalls()).toBe(before);
    const id = res.headers['x-taskhook-call-id'] as string;
    const rec = (await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token })).json();
    expect(rec).toMatchObject({
      status_code: 429,
      error: { code: 'budget_exceeded', message: res.json().error.message },
      input_tokens: null,
      output_tokens: null,
      cost_usd: null,
      platform_key_uuid: user.keyUuid,
    });
  });

  it('names the narrowest reached scope: task, then agent, then platform key, then account', async () => {
    const user = await setup();
    const agent = await createAgent(t, user);
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent.uuid}`, { token: user.token, body: { message: 'm' } })
    ).json().task_id;
    const attributed = { 'x-taskhook-task-id': task };
    // One call spends; then every limit is set to what it spent.
    expect((await chat(user.key, {}, attributed)).statusCode).toBe(200);
    const spent = CALL_NANOS / 1e9;
    await patch(user, 'account', { monthly_usd: spent });
    await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: spent });
    await patch(user, `agents/${agent.uuid}`, { daily_usd: spent, per_task_usd: spent });
    const scopeOf = async (headers: Record<string, string>, token = user.key) => {
      const res = await chat(token, {}, headers);
      return [res.statusCode, res.headers['x-taskhook-budget-scope'], res.headers['retry-after'] !== undefined];
    };
    expect(await scopeOf(attributed)).toEqual([429, 'task', false]);
    await patch(user, `agents/${agent.uuid}`, { per_task_usd: null });
    expect(await scopeOf(attributed)).toEqual([429, 'agent', true]);
    await patch(user, `agents/${agent.uuid}`, { daily_usd: null });
    expect(await scopeOf(attributed)).toEqual([429, 'platform_key', true]);
    // A session is not the key: only the account's limit applies to it.
    expect(await scopeOf(attributed, user.token)).toEqual([429, 'account', true]);
    await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: null });
    const last = await chat(user.key, {}, attributed);
    expect(last.headers['x-taskhook-budget-scope']).toBe('account');
    expect(last.headers['x-taskhook-budget-limit-usd']).toBe(String(spent));
    expect(last.headers['x-taskhook-budget-spent-usd']).toBe(String(spent));
    await patch(user, 'account', { monthly_usd: null });
    expect((await chat(user.key, {}, attributed)).statusCode).toBe(200);
    const task2 = await get(user, `/tasks/${task}`);
    expect(task2.json()).toMatchObject({
      scope: 'task',
      id: task,
      limits: { per_task_usd: null },
      windows: { task: { end: null, spent_usd: (2 * CALL_NANOS) / 1e9 } },
    });
  });

  it('lets a call that starts under the limit finish over it, and refuses the next', async () => {
    const user = await setup();
    await patch(user, 'account', { monthly_usd: (2.5 * CALL_NANOS) / 1e9 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await chat(user.key, { stream: i % 2 === 0 })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const month = (await get(user, '/account')).json().windows.month;
    expect(month).toMatchObject({ spent_usd: (3 * CALL_NANOS) / 1e9, remaining_usd: 0, exceeded: true });
  });

  it('commits a streamed call’s cost before its final event: reading [DONE] and calling again is refused', async () => {
    const user = await setup();
    await patch(user, 'account', { monthly_usd: CALL_NANOS / 2 / 1e9 });
    const res = await fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/gpt-4o', messages, stream: true }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('[DONE]')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain('data: [DONE]');
    // The stream may not have closed yet; its cost is committed all the same.
    const next = await chat(user.key);
    await reader.cancel();
    expect(next.statusCode).toBe(429);
    expect(next.headers['x-taskhook-budget-spent-usd']).toBe(String(CALL_NANOS / 1e9));
  });

  it('reads spend back equal to the sum of the records, to the nano-dollar, with concurrent calls', async () => {
    const user = await setup();
    const agent = await createAgent(t, user);
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent.uuid}`, { token: user.token, body: { message: 'm' } })
    ).json().task_id;
    await patch(user, 'account', { monthly_usd: 1000 });
    await patch(user, `agents/${agent.uuid}`, { daily_usd: 1000, per_task_usd: 1000 });
    await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: 1000 });
    const models = ['fake/gpt-4o', 'fake/gpt-4o-mini', 'fake/o3-mini', 'fake/unpriced'];
    for (let round = 0; round < 3; round += 1) {
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          chat(
            i % 3 === 0 ? user.token : user.key,
            { model: models[i % 4], stream: i % 2 === 0 },
            i % 2 ? { 'x-taskhook-task-id': task } : {},
          ),
        ),
      );
    }
    const all = await records(user);
    expect(all).toHaveLength(36);
    const sum = (rows: Array<Record<string, unknown>>) =>
      rows.reduce((n, r) => n + (r.cost_usd === null ? 0 : nanos(r.cost_usd as number)), 0);
    const budgets = (await get(user, '')).json().budgets as Array<{
      scope: string;
      windows: Record<string, { spent_usd: number }>;
    }>;
    const spentOf = (scope: string) => {
      const b = budgets.find((x) => x.scope === scope);
      return nanos(Object.values(b?.windows ?? {})[0]?.spent_usd ?? Number.NaN);
    };
    expect(spentOf('account')).toBe(sum(all));
    expect(spentOf('platform_key')).toBe(sum(await records(user, `&platform_key_uuid=${user.keyUuid}`)));
    expect(spentOf('agent')).toBe(sum(await records(user, `&agent_uuid=${agent.uuid}`)));
    const taskSpent = (await get(user, `/tasks/${task}`)).json().windows.task.spent_usd;
    expect(nanos(taskSpent)).toBe(sum(await records(user, `&task_id=${task}`)));
    // Every answer's amount is an exact multiple of a nano-dollar, as JavaScript writes it.
    for (const r of all) if (r.cost_usd !== null) expect(nanos(r.cost_usd as number) / 1e9).toBe(r.cost_usd);
    const usage = (
      await call(t.app, 'GET', '/spotlight/usage?from=2026-03-01&to=2026-03-31', { token: user.token })
    ).json();
    expect(nanos(usage.totals.cost_usd)).toBe(sum(all));
    // Sessions leave platform_key_uuid null; the filter refuses a malformed uuid.
    expect(all.filter((r) => r.platform_key_uuid === null)).toHaveLength(12);
    expect(
      (await call(t.app, 'GET', '/spotlight/calls?platform_key_uuid=nope', { token: user.token })).statusCode,
    ).toBe(400);
  });

  it('windows are UTC calendar days and months: a new one starts from zero', async () => {
    // The user signs in at the moved time (a session from mid-month would have expired).
    clock.set(Date.parse('2026-03-31T23:59:59.500Z'));
    const user = await setup();
    const agent = await createAgent(t, user);
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent.uuid}`, { token: user.token, body: { message: 'm' } })
    ).json().task_id;
    const attributed = { 'x-taskhook-task-id': task };
    try {
      await patch(user, `agents/${agent.uuid}`, { daily_usd: 1e-9 });
      await patch(user, 'account', { monthly_usd: (2 * CALL_NANOS) / 1e9 });
      expect((await chat(user.key, {}, attributed)).statusCode).toBe(200);
      const refused = await chat(user.key, {}, attributed);
      expect([refused.statusCode, refused.headers['x-taskhook-budget-scope'], refused.headers['retry-after']]).toEqual([
        429,
        'agent',
        '1',
      ]);
      expect((await chat(user.key)).statusCode).toBe(200);
      expect((await chat(user.key)).headers['x-taskhook-budget-scope']).toBe('account');
      clock.set(Date.parse('2026-04-01T00:00:00.000Z'));
      expect((await get(user, '/account')).json().windows.month).toMatchObject({
        start: '2026-04-01T00:00:00.000Z',
        end: '2026-05-01T00:00:00.000Z',
        spent_usd: 0,
      });
      expect((await chat(user.key, {}, attributed)).statusCode).toBe(200);
      expect((await get(user, `/agents/${agent.uuid}`)).json().windows.day).toMatchObject({
        start: '2026-04-01T00:00:00.000Z',
        spent_usd: CALL_NANOS / 1e9,
        exceeded: true,
      });
    } finally {
      clock.set(Date.parse('2026-03-15T12:00:00.000Z'));
    }
  });

  it('a stock OpenAI client gets the 429 and does not retry it (X-Should-Retry: false)', async () => {
    const user = await setup();
    await patch(user, 'account', { monthly_usd: 0 });
    const client = new OpenAI({ baseURL: `${base}/spotlight/v1`, apiKey: user.key, maxRetries: 3 });
    const err = (await client.chat.completions
      .create({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect([err.status, err.code, err.type]).toEqual([429, 'budget_exceeded', 'insufficient_quota']);
    expect(await records(user)).toHaveLength(1);
  });

  it('deleting an agent deletes its budget; budget changes are audited with field names only', async () => {
    const user = await setup();
    const agent = await createAgent(t, user);
    await patch(user, `agents/${agent.uuid}`, { daily_usd: 3, per_task_usd: null });
    await patch(user, `agents/${agent.uuid}`, { daily_usd: 3 });
    await patch(user, 'account', { monthly_usd: 7 });
    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?action=budget.update`, {
      token: user.token,
    });
    expect(audit.statusCode).toBe(200);
    expect(audit.json().entries.map((e: { target: unknown; details: unknown }) => [e.target, e.details])).toEqual([
      [
        { type: 'budget', uuid: user.uuid },
        { scope: 'account', id: null, fields: ['monthly_usd'] },
      ],
      [
        { type: 'budget', uuid: agent.uuid },
        { scope: 'agent', id: agent.uuid, fields: ['daily_usd'] },
      ],
    ]);
    expect((await call(t.app, 'DELETE', `/agent/${agent.uuid}`, { token: user.token })).statusCode).toBeLessThan(300);
    expect((await get(user, `/agents/${agent.uuid}`)).statusCode).toBe(404);
    const list = (await get(user, '')).json().budgets as Array<{ scope: string }>;
    expect(list.map((b) => b.scope)).toEqual(['account']);
    const left = await t.runtime.db.kysely
      .selectFrom('spotlight_budgets')
      .select('scope_id')
      .where('scope_id', '=', agent.uuid)
      .execute();
    expect(left).toEqual([]);
  });
});
