import { describe, expect, it } from 'vitest';
import { eventually, useCallbackApp } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { submitTask } from '../../helpers/tasks.js';

/*
 * Fair callbacks: at most 4 attempts of one account are in flight per instance (16 in all), so an
 * account whose receivers hang holds 4 slots and another account's callback still goes out. The
 * hanging receiver never answers; the attempt timeout is far longer than the test, so only the
 * per-account bound can let the other account through.
 */

const CONFIG = { allowPrivateUrls: true, callbackTimeoutMs: 120_000, callbackRetrySchedule: [3600] };
const PER_ACCOUNT = 4;

describe.each(DATABASES)('fair callbacks on $name', (database) => {
  const h = useCallbackApp(database, CONFIG);

  it("delivers another account's callback while 20 of one account's hang, with 4 of those in flight", async () => {
    const hanging = await h.receiver(() => null);
    const patient = await createUser(h.t);
    const agent = (await createAgent(h.t, patient)).uuid;
    for (let i = 0; i < 20; i++) {
      const { task_id } = await submitTask(h.t, patient, agent, { callback_mode: 'webhook', webhook_url: hanging.url });
      await h.cancel(patient, agent, task_id);
    }
    await eventually(
      () => (hanging.requests.length >= PER_ACCOUNT ? true : undefined),
      'the hanging receiver to get its first requests',
    );

    const fine = await h.receiver();
    const other = await h.webhookTask(fine.url);
    await h.cancel(other.user, other.agent, other.taskId);
    await eventually(() => (fine.requests.length === 1 ? true : undefined), "the other account's callback");
    expect(hanging.requests).toHaveLength(PER_ACCOUNT);
    const [delivery] = await h.settled(other.user, other.agent, other.taskId);
    expect(delivery).toMatchObject({ status: 'delivered', event_type: 'task.cancelled' });

    // Let the hanging attempts fail (connection reset) so the app can stop: they are retried in an hour.
    await hanging.close();
  });
});
