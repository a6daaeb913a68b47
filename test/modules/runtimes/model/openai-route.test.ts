import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../../helpers/fake-openai.js';
import { createCredential } from '../../../helpers/spotlight.js';
import { submitTask, waitForStatus } from '../../../helpers/tasks.js';

describe.each(DATABASES)('an openai-runtime agent on a fallback route on $name', (shared) => {
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let upstream: FakeOpenAi;
  let user: TestUser;
  let credential: string;
  let route: { uuid: string; name: string };

  const newAgent = (runtime: Record<string, unknown>, who = user) =>
    call(t.app, 'POST', '/agent', { token: who.token, body: { name: `a-${Math.random()}`, runtime } });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 200 } });
    user = await createUser(t);
    credential = (await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl })).uuid;
    const res = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: {
        name: 'review',
        targets: [
          { provider_credential_uuid: credential, model: 'broken' },
          { provider_credential_uuid: credential, model: 'gpt-4o' },
        ],
      },
    });
    route = res.json();
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
    await drop();
  });

  it('runs each task as one route call: the first target fails over, the task completes', async () => {
    const agent = await createAgent(t, user, {
      runtime: { type: 'openai', route_uuid: route.uuid, system_prompt: 'Review' },
    });
    const got = (await call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token })).json();
    expect(got.runtime).toEqual({ type: 'openai', route_uuid: route.uuid, system_prompt: 'Review' });
    const { task_id } = await submitTask(t, user, agent.uuid, { message: 'look' });
    const done = await waitForStatus(t, user, agent.uuid, task_id, 'completed');
    expect(done.result).toEqual({ summary: 'Hello there', findings: [] });
    const calls = (await call(t.app, 'GET', `/spotlight/calls?task_id=${task_id}`, { token: user.token })).json().calls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      source: 'runtime',
      model: 'route:review',
      upstream_model: 'gpt-4o',
      route: { uuid: route.uuid, name: 'review' },
      status_code: 200,
    });
    expect(calls[0].attempts.map((a: { upstream_model: string }) => a.upstream_model)).toEqual(['broken', 'gpt-4o']);
    // The body each target got is the run's, with that target's model.
    const sent = upstream.seen.findLast((s) => s.body?.model === 'gpt-4o');
    expect(sent?.body?.messages).toEqual([
      { role: 'system', content: 'Review' },
      { role: 'user', content: 'look' },
    ]);

    const inUse = await call(t.app, 'DELETE', `/spotlight/routes/${route.uuid}`, { token: user.token });
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().error.code).toBe('ROUTE_IN_USE');
  });

  it('takes exactly one of route_uuid or provider_credential_uuid with model', async () => {
    const other = await createUser(t);
    const cases: Array<[Record<string, unknown>, string, TestUser?]> = [
      [{ route_uuid: route.uuid, provider_credential_uuid: credential, model: 'gpt-4o' }, 'runtime.route_uuid'],
      [{ route_uuid: route.uuid, model: 'gpt-4o' }, 'runtime.route_uuid'],
      [{}, 'runtime.route_uuid'],
      [{ route_uuid: crypto.randomUUID() }, 'runtime.route_uuid'],
      [{ route_uuid: 'not-a-uuid' }, 'runtime.route_uuid'],
      [{ route_uuid: route.uuid }, 'runtime.route_uuid', other],
      [{ model: 'gpt-4o' }, 'runtime.provider_credential_uuid'],
      [{ provider_credential_uuid: credential }, 'runtime.model'],
    ];
    for (const [fields, field, who] of cases) {
      const res = await newAgent({ type: 'openai', ...fields }, who);
      expect(res.statusCode, JSON.stringify(fields)).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field } });
    }
  });
});
