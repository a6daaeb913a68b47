import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { eventually, type Receiver, startReceiver } from '../../helpers/callbacks.js';
import { DATABASES, ownDatabase, type TestDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { pushAgent, pushBodyOf } from '../../helpers/push-agent.js';
import { cancelTask, listTasks, submitTask, waitForStatus } from '../../helpers/tasks.js';

/*
 * Outbound fairness of push runs: one account whose http agents never answer cannot hold the
 * connections or the runs another account needs. Both accounts' agents are on the same origin
 * (one receiver on 127.0.0.1), so before per-account lanes account A's hanging requests took all
 * 64 connections of the http runtime's pool, and B's request waited in undici's queue past its own
 * timeout (its abort signal is not heard there). Waits are generous; nothing is timed.
 */

function useApp(shared: TestDatabase, config: Partial<Config>) {
  let drop: () => Promise<void> = async () => undefined;
  const h = { t: undefined as unknown as TestApp, receiver: undefined as unknown as Receiver };
  beforeAll(async () => {
    h.receiver = await startReceiver(pushAgent);
    const own = await ownDatabase(shared);
    drop = own.drop;
    h.t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 100, ...config } });
  });
  afterAll(async () => {
    await h.t?.close();
    await h.receiver?.close();
    await drop();
  });
  return h;
}

/** The task.run POSTs that reached `/hang` from the given agents. */
/**
 * The runs (`task.run` pushes) the hanging endpoint received for these agents. A cancel also sends
 * the agent a `task.cancelled` there, which is not a run.
 */
const hangingRuns = (receiver: Receiver, agents: string[]) =>
  receiver.requests.filter((r) => {
    if (r.path !== '/hang') return false;
    const body = pushBodyOf(r);
    return body.type === 'task.run' && agents.includes(body.data.agent_uuid);
  }).length;

async function httpAgent(t: TestApp, user: TestUser, receiver: Receiver, path: string, extra = {}) {
  const url = receiver.url.replace('/hook', path);
  return (await createAgent(t, user, { runtime: { type: 'http', url, ...extra }, concurrency: 100 })).uuid;
}

describe.each(DATABASES)('push runs of one account do not starve another on $name', (shared) => {
  describe('with the default limits', () => {
    const h = useApp(shared, {});

    it("completes B's run while A has 70 runs hanging on the same origin", async () => {
      const a = await createUser(h.t);
      const hang = await httpAgent(h.t, a, h.receiver, '/hang', { timeout_seconds: 300 });
      for (let i = 0; i < 70; i++) await submitTask(h.t, a, hang, { message: `hang ${i}` });
      const perAccount = h.t.config.outboundPerAccount;
      await eventually(() => (hangingRuns(h.receiver, [hang]) >= perAccount ? true : undefined), "A's requests");

      const b = await createUser(h.t);
      const sync = await httpAgent(h.t, b, h.receiver, '/sync', { timeout_seconds: 10 });
      const { task_id } = await submitTask(h.t, b, sync, { message: 'review' });
      const done = await waitForStatus(h.t, b, sync, task_id, 'completed', 20_000);
      expect(done.result).toMatchObject({ summary: 'reviewed: review' });
      // A holds its lane's slots and no more: its other runs wait in its own queue, or stay queued.
      expect(hangingRuns(h.receiver, [hang])).toBe(perAccount);
      const running = await listTasks(h.t, a, hang, '?status=running&limit=100');
      expect(running.pagination.total).toBe(h.t.config.pushRunsPerAccount);
    });
  });

  describe('with 3 push runs per account', () => {
    const h = useApp(shared, { pushRunsPerAccount: 3 });

    it("caps one account's runs over all its agents, and starts the next when one ends", async () => {
      const a = await createUser(h.t);
      const agents = [
        await httpAgent(h.t, a, h.receiver, '/hang', { timeout_seconds: 300 }),
        await httpAgent(h.t, a, h.receiver, '/hang', { timeout_seconds: 300 }),
      ];
      const tasks: Array<[string, string]> = [];
      for (const agent of agents) {
        for (let i = 0; i < 3; i++) tasks.push([agent, (await submitTask(h.t, a, agent, { message: 'x' })).task_id]);
      }
      await eventually(() => (hangingRuns(h.receiver, agents) >= 3 ? true : undefined), "A's first runs");

      const b = await createUser(h.t);
      const sync = await httpAgent(h.t, b, h.receiver, '/sync');
      const { task_id } = await submitTask(h.t, b, sync, { message: 'review' });
      await waitForStatus(h.t, b, sync, task_id, 'completed', 30_000);
      expect(hangingRuns(h.receiver, agents)).toBe(3);

      // Cancelling one of A's running tasks frees a run: one of its queued tasks starts.
      const runningIds = h.receiver.requests.filter((r) => r.path === '/hang').map((r) => pushBodyOf(r).data.task_id);
      const [agent, first] = tasks.find(([, id]) => runningIds.includes(id)) ?? [];
      if (!agent || !first) throw new Error('no running task of A');
      await cancelTask(h.t, a, agent, first);
      await eventually(() => (hangingRuns(h.receiver, agents) === 4 ? true : undefined), "A's next run");
    });
  });
});
