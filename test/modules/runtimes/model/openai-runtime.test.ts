import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../../helpers/fake-openai.js';
import { createCredential, eventually } from '../../../helpers/spotlight.js';
import { cancelTask, getTask, sendMessage, submitTask, waitForStatus } from '../../../helpers/tasks.js';

describe.each(DATABASES)('agents that are a model (openai runtime) on $name', (shared) => {
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let upstream: FakeOpenAi;
  let user: TestUser;
  let credential: string;

  const modelAgent = (model: string, extra: Record<string, unknown> = {}) =>
    createAgent(t, user, { runtime: { type: 'openai', provider_credential_uuid: credential, model, ...extra } });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    // Storage of its own: on the shared PostgreSQL database every app's dispatcher runs every
    // model agent's tasks, with its own settings (private upstream addresses refused).
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 200 } });
    user = await createUser(t);
    credential = (await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl })).uuid;
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
    await drop();
  });

  it('answers a task with the model: completed with its answer, runtime stored as given', async () => {
    const agent = await modelAgent('gpt-4o', { system_prompt: 'You review code' });
    const got = (await call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token })).json();
    expect(got.runtime).toEqual({
      type: 'openai',
      provider_credential_uuid: credential,
      model: 'gpt-4o',
      system_prompt: 'You review code',
    });
    const { task_id } = await submitTask(t, user, agent.uuid, { message: 'review this' });
    const done = await waitForStatus(t, user, agent.uuid, task_id, 'completed');
    expect(done.result).toEqual({ summary: 'Hello there', findings: [] });
    const sent = upstream.seen.findLast((s) => s.body?.model === 'gpt-4o');
    expect(sent?.body?.messages).toEqual([
      { role: 'system', content: 'You review code' },
      { role: 'user', content: 'review this' },
    ]);
    // The test handle runs a pass on demand: nothing is left to hand out.
    expect(await t.app.background.dispatch()).toBe(0);
  });

  it('asks for input, then runs again with the whole conversation once the user answers', async () => {
    const agent = await modelAgent('ask', { allow_input_requests: true });
    const { task_id } = await submitTask(t, user, agent.uuid, { message: 'review it' });
    const waiting = await waitForStatus(t, user, agent.uuid, task_id, 'awaiting_input');
    expect(waiting.input_request?.message).toBe('Which branch?');
    // Without the tool the fake model answers: the next run completes.
    const patch = { runtime: { type: 'openai', provider_credential_uuid: credential, model: 'ask' } };
    expect((await call(t.app, 'PATCH', `/agent/${agent.uuid}`, { token: user.token, body: patch })).statusCode).toBe(
      200,
    );
    expect((await sendMessage(t, user, agent.uuid, task_id, 'main')).statusCode).toBeLessThan(300);
    const done = await waitForStatus(t, user, agent.uuid, task_id, 'completed');
    expect(done.result).toEqual({ summary: 'Hello there', findings: [] });
    expect(upstream.seen.at(-1)?.body?.messages).toEqual([
      { role: 'user', content: 'review it' },
      { role: 'assistant', content: 'Which branch?' },
      { role: 'user', content: 'main' },
    ]);
  });

  it('retries an upstream 500 with backoff, then fails with PROVIDER_ERROR after three attempts', async () => {
    const agent = await modelAgent('broken');
    const before = upstream.seen.filter((s) => s.body?.model === 'broken').length;
    const { task_id } = await submitTask(t, user, agent.uuid);
    const failed = await waitForStatus(t, user, agent.uuid, task_id, 'failed', 15_000);
    expect(failed.error?.code).toBe('PROVIDER_ERROR');
    expect(failed.error?.message).toContain('500');
    expect(upstream.seen.filter((s) => s.body?.model === 'broken').length - before).toBe(3);
  });

  it('cancel during a slow call aborts the upstream request', async () => {
    const agent = await modelAgent('hang');
    const closedBefore = upstream.state.closed;
    const { task_id } = await submitTask(t, user, agent.uuid);
    await waitForStatus(t, user, agent.uuid, task_id, 'running');
    await eventually(async () => (upstream.seen.some((s) => s.body?.model === 'hang') ? true : undefined));
    expect((await cancelTask(t, user, agent.uuid, task_id)).statusCode).toBe(200);
    await eventually(async () => (upstream.state.closed > closedBefore ? true : undefined));
    expect((await getTask(t, user, agent.uuid, task_id)).status).toBe('cancelled');
  });

  it('refuses worker claims on the agent, and credentials that are not the owner’s', async () => {
    const agent = await modelAgent('gpt-4o');
    const claim = await call(t.app, 'POST', `/agent/${agent.uuid}/tasks/claim`, { token: user.token, body: {} });
    expect(claim.statusCode).toBe(400);
    expect(claim.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'runtime' } });

    const other = await createUser(t);
    const theirs = await call(t.app, 'POST', '/agent', {
      token: other.token,
      body: { name: 'x', runtime: { type: 'openai', provider_credential_uuid: credential, model: 'gpt-4o' } },
    });
    expect(theirs.statusCode).toBe(400);
    expect(theirs.json().error.details.field).toBe('runtime.provider_credential_uuid');
    const patch = await call(t.app, 'PATCH', `/agent/${agent.uuid}`, {
      token: user.token,
      body: { runtime: { type: 'openai', provider_credential_uuid: crypto.randomUUID(), model: 'gpt-4o' } },
    });
    expect(patch.statusCode).toBe(400);
  });
});
