import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { agentsRepo } from '../../../src/modules/agents/agents-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { submitTask } from '../../helpers/tasks.js';

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

// Submits to a worker agent must not cost the push dispatcher a query each: once it has seen the
// agent is a worker, the agent's task changes wake nothing.
describe.each(DATABASES)('push dispatcher wake-ups on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    // No periodic pass during the test: only wake-ups look for work.
    t = await buildTestApp(database, { config: { sweepIntervalMs: 86_400_000 } });
  });
  afterAll(() => t.close());

  it('looks once for a new worker agent, then not again for its submits', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const looks = vi.spyOn(queueRepo, 'agentsWithWork');
    const lookups = vi.spyOn(agentsRepo, 'runtimeTypes');
    try {
      await submitTask(t, user, agent);
      await vi.waitFor(() => expect(lookups).toHaveBeenCalled());
      await turns(20);
      looks.mockClear();
      lookups.mockClear();
      for (let i = 0; i < 5; i++) await submitTask(t, user, agent, { message: `m${i}` });
      await turns(20);
      expect(looks).not.toHaveBeenCalled();
      expect(lookups).not.toHaveBeenCalled();
    } finally {
      looks.mockRestore();
      lookups.mockRestore();
    }
  });
});
