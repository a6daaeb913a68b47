import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../../helpers/fake-openai.js';
import { createCredential } from '../../../helpers/spotlight.js';
import { getTask, submitTask, waitForStatus } from '../../../helpers/tasks.js';

const MINUTE = 60_000;

describe.each(DATABASES)('openai runtime under RPM limits on $name', (shared) => {
  // A minute far ahead of real time, so the shared counters hold nothing of other runs.
  const offset = (1 + Math.floor(Math.random() * 1e6)) * 3_600_000;
  const clock = manualClock(Math.floor((Date.now() + offset) / MINUTE) * MINUTE + MINUTE);
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let upstream: FakeOpenAi;
  let user: TestUser;
  let credential: string;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    // Storage of its own: every app's dispatcher runs every model agent's tasks it finds.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { clock, config: { allowPrivateUrls: true, sweepIntervalMs: 100 } });
    user = await createUser(t);
    credential = (await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl })).uuid;
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
    await drop();
  });

  it('hands a task to the runtime only when the agent’s rpm admits its call; otherwise it stays queued', async () => {
    const agent = await createAgent(t, user, {
      concurrency: 4,
      runtime: { type: 'openai', provider_credential_uuid: credential, model: 'limited-model' },
    });
    const set = await call(t.app, 'PATCH', `/spotlight/rate_limits/agents/${agent.uuid}`, {
      token: user.token,
      body: { rpm: 1 },
    });
    expect(set.statusCode).toBe(200);
    const calls = () => upstream.seen.filter((s) => s.body?.model === 'limited-model').length;

    const first = await submitTask(t, user, agent.uuid, { message: 'one' });
    await waitForStatus(t, user, agent.uuid, first.task_id, 'completed');
    const second = await submitTask(t, user, agent.uuid, { message: 'two' });
    // Several dispatcher passes go by: the task is not handed out, no attempt is used.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const waiting = await getTask(t, user, agent.uuid, second.task_id);
    expect(waiting.status).toBe('queued');
    expect(waiting).toMatchObject({ attempt: 1, last_error: null });
    expect(calls()).toBe(1);
    const window = await call(t.app, 'GET', `/spotlight/rate_limits/agents/${agent.uuid}`, { token: user.token });
    expect(window.json().window).toMatchObject({ requests: 1, remaining_requests: 0 });
    const records = await call(t.app, 'GET', `/spotlight/calls?agent_uuid=${agent.uuid}`, { token: user.token });
    expect(records.json().calls).toHaveLength(1);

    // The next minute admits it.
    clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE);
    await waitForStatus(t, user, agent.uuid, second.task_id, 'completed');
    expect(calls()).toBe(2);
  });
});
