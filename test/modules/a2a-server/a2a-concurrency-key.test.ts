import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { getTask } from '../../helpers/tasks.js';
import { a2aRpc, userMessage } from './a2a-rpc.js';

describe.each(DATABASES)('the concurrency key of a task sent over A2A on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('is metadata.concurrency_key when it is a string of 1 to 255 characters, else none', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const a = a2aRpc(t, user, agent);
    const cases: Array<[unknown, string | null]> = [
      ['tenant-9', 'tenant-9'],
      ['k'.repeat(255), 'k'.repeat(255)],
      ['k'.repeat(256), null],
      ['', null],
      [42, null],
      [undefined, null],
    ];
    for (const [key, expected] of cases) {
      const metadata = key === undefined ? { other: 1 } : { concurrency_key: key };
      const { result, error } = await a.rpc('SendMessage', {
        message: userMessage('hello', { metadata }),
        configuration: { returnImmediately: true },
      });
      expect(error).toBeUndefined();
      expect((await getTask(t, user, agent, result.task.id)).concurrency_key).toBe(expected);
    }
  });
});
