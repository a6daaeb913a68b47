import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { submitTask } from '../../helpers/tasks.js';

/*
 * Every submit passes through its account's lane (TASKHOOK_SUBMITS_PER_ACCOUNT): with a lane of
 * one, a burst of one account is worked on one submit at a time, the rest waiting, while another
 * account's submit goes straight in (the order and hand-over are tested in account-lanes.test.ts).
 */

async function waited(t: TestApp): Promise<number> {
  const res = await call(t.app, 'GET', '/metrics');
  const families = parsePrometheusTextFormat(res.body) as Array<{ name: string; metrics: Array<{ value: string }> }>;
  return Number(families.find((f) => f.name === 'taskhook_submits_waited_total')?.metrics[0]?.value);
}

describe.each(DATABASES)('submits in per-account lanes on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { metrics: true, submitsPerAccount: 1 } });
  });
  afterAll(() => t.close());

  it('a burst of one account waits in its own lane; every submit is answered', async () => {
    const [busy, quiet] = [await createUser(t), await createUser(t)];
    const [busyAgent, quietAgent] = [await createAgent(t, busy), await createAgent(t, quiet)];
    const before = await waited(t);
    const burst = Array.from({ length: 20 }, (_, i) => submitTask(t, busy, busyAgent.uuid, { message: `burst ${i}` }));
    const alone = await submitTask(t, quiet, quietAgent.uuid, { message: 'quiet' });
    const answers = await Promise.all(burst);
    expect(alone.status).toBe('queued');
    expect(new Set(answers.map((a) => a.task_id)).size).toBe(20);
    // With one slot, the burst's submits after the first waited for it.
    expect((await waited(t)) - before).toBeGreaterThan(0);
  });
});
