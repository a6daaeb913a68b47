import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { getTask, workerHeaders } from '../../helpers/tasks.js';
import { createTrigger, deliver, patchAs } from '../../helpers/triggers.js';

describe.each(DATABASES)('the concurrency_key template of a trigger on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agent: string;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    agent = (await createAgent(t, user)).uuid;
  });
  afterAll(() => t.close());

  /** Delivers `payload` and @returns the task it created. */
  async function taskOf(trigger: { uuid: string; webhook_secret: string }, payload: unknown) {
    const res = await deliver(t, trigger.uuid, { body: payload, secret: trigger.webhook_secret });
    expect(res.statusCode, res.body).toBe(202);
    return getTask(t, user, agent, res.json().task_id);
  }

  it('is null by default, shown in the body, set and cleared by PATCH', async () => {
    const trigger = await createTrigger(t, user, agent);
    expect(trigger.concurrency_key).toBeNull();
    const url = `/v1/agent/${agent}/triggers/${trigger.uuid}`;
    expect((await patchAs(t, user, url, { concurrency_key: 'repo-{{payload.repo}}' })).concurrency_key).toBe(
      'repo-{{payload.repo}}',
    );
    const got = await call(t.app, 'GET', url, { headers: workerHeaders(user) });
    expect(got.json().concurrency_key).toBe('repo-{{payload.repo}}');
    expect((await patchAs(t, user, url, { concurrency_key: null })).concurrency_key).toBeNull();
  });

  it('is rendered per delivery: the key, none when empty, cut to 255, missing paths not reported', async () => {
    const trigger = await createTrigger(t, user, agent, {
      message_template: 'PR {{payload.number}}',
      concurrency_key: '{{payload.repository.full_name}}',
    });
    const keyed = await taskOf(trigger, { number: 1, repository: { full_name: 'octo/hello' } });
    expect(keyed.concurrency_key).toBe('octo/hello');
    expect(keyed.metadata.template_missing).toEqual([]);
    const none = await taskOf(trigger, { number: 2 });
    expect(none.concurrency_key).toBeNull();
    expect(none.metadata.template_missing).toEqual([]);
    const long = await taskOf(trigger, { number: 3, repository: { full_name: 'x'.repeat(400) } });
    expect(long.concurrency_key).toBe('x'.repeat(255));
    const withMissing = await createTrigger(t, user, agent, {
      message_template: 'PR {{payload.number}}',
      concurrency_key: 'k-{{payload.nope}}',
    });
    const partial = await taskOf(withMissing, { number: 4 });
    expect(partial.concurrency_key).toBe('k-');
    expect(partial.metadata.template_missing).toEqual([]);
  });

  it('refuses a bad template or one over 1,000 characters with 400 naming concurrency_key', async () => {
    for (const key of ['{{payload.a', '{{nope}}', 'x'.repeat(1001), 5]) {
      const res = await call(t.app, 'POST', `/v1/agent/${agent}/triggers`, {
        headers: workerHeaders(user),
        body: { name: 'bad', message_template: 'hi', concurrency_key: key },
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'concurrency_key' } });
    }
    const trigger = await createTrigger(t, user, agent);
    const res = await call(t.app, 'PATCH', `/v1/agent/${agent}/triggers/${trigger.uuid}`, {
      headers: workerHeaders(user),
      body: { concurrency_key: '{{payload.}}' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ details: { field: 'concurrency_key' } });
  });
});
