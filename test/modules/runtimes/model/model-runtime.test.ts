import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../../../src/lib/crypto.js';
import { agentsRepo } from '../../../../src/modules/agents/agents-repo.js';
import { createProvidersModule } from '../../../../src/modules/providers/providers-module.js';
import { createModelRuntime, type ModelRun } from '../../../../src/modules/runtimes/model/model-runtime.js';
import { routesRepo } from '../../../../src/modules/spotlight/routes/routes-repo.js';
import { createSpotlightModule } from '../../../../src/modules/spotlight/spotlight-module.js';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { DATABASES } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { type FakeOpenAi, REVIEW, startFakeOpenAi } from '../../../helpers/fake-openai.js';
import { createCredential, eventually } from '../../../helpers/spotlight.js';

describe.each(DATABASES)('the model runtime on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let user: TestUser;
  let runtime: ReturnType<typeof createModelRuntime>;
  let base: Omit<ModelRun, 'runtime' | 'signal'>;
  let credential: string;
  let closeSpotlight: () => Promise<void>;

  const run = (model: string, extra: Record<string, unknown> = {}, signal = new AbortController().signal) =>
    runtime.run({
      ...base,
      runtime: { type: 'openai', provider_credential_uuid: credential, model, ...extra },
      signal,
    });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, proxyTimeoutMs: 1500 } });
    // The runtime uses the proxy path of the production modules, over the test app's storage.
    const box = createSecretBox(t.runtime.secrets.encryptionKey);
    const providers = createProvidersModule({
      config: t.config,
      runtime: t.runtime,
      box,
      routesNaming: routesRepo.namingCredential,
      agentsUsing: agentsRepo.namesUsingCredential,
    }).service;
    const spotlight = createSpotlightModule({ config: t.config, runtime: t.runtime, providers });
    closeSpotlight = spotlight.close;
    runtime = createModelRuntime({ spotlight: spotlight.service, now: Date.now });
    user = await createUser(t);
    credential = (await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl })).uuid;
    const agent = await createAgent(t, user);
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent.uuid}`, { token: user.token, body: { message: 'review' } })
    ).json();
    base = {
      workspaceUuid: user.uuid,
      agentUuid: agent.uuid,
      taskUuid: task.task_id,
      conversation: [{ role: 'user', content: 'review' }],
    };
  });
  afterAll(async () => {
    await closeSpotlight();
    await t.close();
    await upstream.close();
  });

  it('completes with the answer, sending exactly the documented body, and records the call for the task', async () => {
    const outcome = await run('gpt-4o', { system_prompt: 'You review code', temperature: 0.1, max_output_tokens: 99 });
    expect(outcome).toMatchObject({ kind: 'completed', result: { summary: 'Hello there', findings: [] } });
    expect(upstream.seen.at(-1)?.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'You review code' },
        { role: 'user', content: 'review' },
      ],
      temperature: 0.1,
      max_completion_tokens: 99,
    });
    const record = (await call(t.app, 'GET', `/spotlight/calls/${outcome.callId}`, { token: user.token })).json();
    expect(record).toMatchObject({
      source: 'runtime',
      model: 'gpt-4o',
      upstream_model: 'gpt-4o',
      task_id: base.taskUuid,
      agent_uuid: base.agentUuid,
      input_tokens: 11,
      status_code: 200,
    });
  });

  it('reads a fenced JSON review into summary and findings', async () => {
    const outcome = await run('findings');
    const { extra: _extra, ...finding } = REVIEW.findings[0] as (typeof REVIEW.findings)[0];
    expect(outcome).toMatchObject({ kind: 'completed', result: { summary: 'One problem', findings: [finding] } });
  });

  it('asks for input through the request_input tool when allowed', async () => {
    expect(await run('ask', { allow_input_requests: true })).toMatchObject({
      kind: 'input_request',
      message: 'Which branch?',
    });
    expect(upstream.seen.at(-1)?.body?.tools).toHaveLength(1);
  });

  it('classifies failures: 429 and 5xx retryable (with Retry-After), 4xx final, unreachable and slow retryable', async () => {
    expect(await run('rate-limited')).toMatchObject({
      kind: 'failed',
      retryable: true,
      retryAfterMs: 7000,
      message: 'The provider answered HTTP 429: Rate limit reached for requests',
    });
    expect(await run('broken')).toMatchObject({ kind: 'failed', retryable: true });
    expect(await run('hang')).toMatchObject({
      kind: 'failed',
      retryable: true,
      message: expect.stringContaining('HTTP 504'),
    });
    const bad = await createCredential(t, user, { name: 'badkey', base_url: upstream.baseUrl, api_key: 'bad-key' });
    const refused = await runtime.run({
      ...base,
      runtime: { type: 'openai', provider_credential_uuid: bad.uuid, model: 'x' },
      signal: new AbortController().signal,
    });
    expect(refused).toMatchObject({
      kind: 'failed',
      retryable: false,
      message: 'The provider answered HTTP 401: Incorrect API key provided',
    });
    const dead = await createCredential(t, user, { name: 'dead', base_url: 'http://127.0.0.1:1/v1' });
    const unreachable = await runtime.run({
      ...base,
      runtime: { type: 'openai', provider_credential_uuid: dead.uuid, model: 'x' },
      signal: new AbortController().signal,
    });
    expect(unreachable).toMatchObject({
      kind: 'failed',
      retryable: true,
      message: expect.stringContaining('HTTP 502'),
    });
  });

  it('aborts the upstream request when the run is cancelled', async () => {
    const closed = upstream.state.closed;
    const hangs = upstream.seen.filter((s) => s.body?.model === 'hang').length;
    const controller = new AbortController();
    const pending = run('hang', {}, controller.signal);
    await eventually(async () =>
      upstream.seen.filter((s) => s.body?.model === 'hang').length > hangs ? true : undefined,
    );
    controller.abort();
    expect(await pending).toMatchObject({ kind: 'aborted' });
    await eventually(async () => (upstream.state.closed > closed ? true : undefined));
  });
});
