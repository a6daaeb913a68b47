import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential } from '../../helpers/spotlight.js';
import { submitTask } from '../../helpers/tasks.js';

const messages = [{ role: 'user', content: 'hi' }];
const refusalOf = (model: string) => ({
  error: {
    message: `Model ${model} has no price and a budget applies to this call: add it to TASKHOOK_MODEL_PRICES_FILE`,
    type: 'invalid_request_error',
    param: 'model',
    code: 'model_not_priced',
  },
});

/** A model without a price cannot be counted against a budget: under one it is refused. */
describe.each(DATABASES)('unpriced models under a budget on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;

  const chat = (
    token: string,
    model: string,
    body: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) => call(t.app, 'POST', '/spotlight/v1/chat/completions', { token, body: { model, messages, ...body }, headers });
  const patch = (user: TestUser, path: string, body: unknown) =>
    call(t.app, 'PATCH', `/spotlight/budgets/${path}`, { token: user.token, body });
  const record = async (user: TestUser, id: string) =>
    (await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token })).json();
  const upstreamCalls = () => upstream.seen.filter((s) => s.path === '/chat/completions').length;

  /** A user with a credential `fake` on the fake upstream. */
  async function setup() {
    const user = await createUser(t);
    const credential = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    return { user, credential };
  }

  /** The answer is the refusal, nothing went upstream, and the record says so. */
  async function expectRefused(user: TestUser, res: Awaited<ReturnType<typeof chat>>, model: string, before: number) {
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(refusalOf(model));
    expect(upstreamCalls()).toBe(before);
    const id = res.headers['x-taskhook-call-id'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const rec = await record(user, id);
    expect(rec).toMatchObject({
      status_code: 400,
      error: { code: 'model_not_priced', message: refusalOf(model).error.message },
      attempts: [],
      input_tokens: null,
      output_tokens: null,
      cost_usd: null,
      upstream_model: model,
    });
    return rec;
  }

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true } });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('without a budget an unpriced model goes upstream with cost null; under one it is refused, streamed or not', async () => {
    const { user } = await setup();
    const free = await chat(user.key, 'fake/llama3');
    expect(free.statusCode).toBe(200);
    expect((await record(user, free.headers['x-taskhook-call-id'] as string)).cost_usd).toBeNull();

    // A limit far from reached still applies.
    expect((await patch(user, 'account', { monthly_usd: 100 })).statusCode).toBe(200);
    await expectRefused(user, await chat(user.key, 'fake/llama3'), 'llama3', upstreamCalls());
    const streamed = await chat(user.key, 'fake/llama3', { stream: true });
    expect((await expectRefused(user, streamed, 'llama3', upstreamCalls())).stream).toBe(true);
    // With X-Taskhook-Credential the upstream model is the model sent.
    await expectRefused(
      user,
      await chat(user.token, 'my-model', {}, { 'x-taskhook-credential': 'fake' }),
      'my-model',
      upstreamCalls(),
    );
    // Priced models, snapshots included, go on as before.
    const priced = await chat(user.key, 'fake/gpt-4o-2024-08-06');
    expect(priced.statusCode).toBe(200);
    expect((await record(user, priced.headers['x-taskhook-call-id'] as string)).cost_usd).toBeGreaterThan(0);
  });

  it('a reached limit answers 429 first', async () => {
    const { user } = await setup();
    await patch(user, 'account', { monthly_usd: 0 });
    const res = await chat(user.key, 'fake/llama3');
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('budget_exceeded');
  });

  it('a budget applies through any scope of the call: the platform key, the agent, the task', async () => {
    const { user } = await setup();
    // The key's limit applies to calls the key authenticates, not to the session's.
    await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: 5 });
    await expectRefused(user, await chat(user.key, 'fake/llama3'), 'llama3', upstreamCalls());
    expect((await chat(user.token, 'fake/llama3')).statusCode).toBe(200);
    await patch(user, `platform_keys/${user.keyUuid}`, { monthly_usd: null });
    expect((await chat(user.key, 'fake/llama3')).statusCode).toBe(200);

    const agent = await createAgent(t, user);
    const { task_id } = await submitTask(t, user, agent.uuid);
    const forTask = { 'x-taskhook-task-id': task_id };
    await patch(user, `agents/${agent.uuid}`, { per_task_usd: 1 });
    await expectRefused(user, await chat(user.key, 'fake/llama3', {}, forTask), 'llama3', upstreamCalls());
    await patch(user, `agents/${agent.uuid}`, { per_task_usd: null, daily_usd: 1 });
    await expectRefused(user, await chat(user.key, 'fake/llama3', {}, forTask), 'llama3', upstreamCalls());
    // Not attributed to the agent: no budget applies.
    expect((await chat(user.key, 'fake/llama3')).statusCode).toBe(200);
  });

  it('a route is refused before target 1 when any of its targets is unpriced', async () => {
    const { user, credential } = await setup();
    const targets = [
      { provider_credential_uuid: credential.uuid, model: 'gpt-4o' },
      { provider_credential_uuid: credential.uuid, model: 'llama3' },
    ];
    const route = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: { name: 'mixed', targets },
    });
    expect(route.statusCode, route.body).toBe(201);
    expect((await chat(user.key, 'route:mixed')).statusCode).toBe(200);
    await patch(user, 'account', { monthly_usd: 100 });
    const rec = await expectRefused(user, await chat(user.key, 'route:mixed'), 'llama3', upstreamCalls());
    expect(rec).toMatchObject({ model: 'route:mixed', route: { uuid: route.json().uuid, name: 'mixed' } });
  });

  it('a cache hit is answered before the check, as before the budget check', async () => {
    const { user } = await setup();
    const cached = { 'x-taskhook-cache': 'max-age=600' };
    const miss = await chat(user.key, 'fake/llama3', {}, cached);
    expect(miss.statusCode).toBe(200);
    await patch(user, 'account', { monthly_usd: 100 });
    const before = upstreamCalls();
    const hit = await chat(user.key, 'fake/llama3', {}, cached);
    expect(hit.statusCode).toBe(200);
    expect(hit.headers['x-taskhook-cache']).toBe('hit');
    expect(hit.body).toBe(miss.body);
    // Not in the cache: refused, and marked a miss like any answer of a call with a policy.
    const other = await chat(user.key, 'fake/llama3', { temperature: 0.5 }, cached);
    expect(other.headers['x-taskhook-cache']).toBe('miss');
    await expectRefused(user, other, 'llama3', before);
  });
});
