import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningWorker, runWorker } from '@taskhook/sdk';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownDatabase, POSTGRES_URL, type TestDatabase, tempDir } from '../helpers/databases.js';
import { uniqueEmail } from '../helpers/factories.js';
import {
  ensureBuilt,
  freePort,
  killHard,
  runCli,
  type ServerProcess,
  serverEnv,
  startServer,
} from '../helpers/server-process.js';

/*
 * Three real server processes on one PostgreSQL database with Redis, SDK workers spread over them,
 * and one instance killed with SIGKILL in the middle: every acknowledged task is completed exactly
 * once, and the rate limit holds across instances.
 */

const redisUrl = process.env.TEST_REDIS_URL;
/** OPS_TASKS makes a quicker local run; CI runs the full 5,000. */
const TASKS = Number(process.env.OPS_TASKS ?? 5_000);
const WORKERS = 8;
const IN_FLIGHT = 48;
const LIMIT = 1_000;

interface Instance {
  base: string;
  server: ServerProcess;
}

describe.runIf(POSTGRES_URL && redisUrl)('three instances on one PostgreSQL with Redis', () => {
  const http = new Agent({ connections: 64, pipelining: 1 });
  const instances: Instance[] = [];
  let database: TestDatabase;

  /** Three servers on `database` with Redis; one at a time, so the first migrates alone. */
  async function startInstances(db: TestDatabase, extra: Record<string, string>): Promise<Instance[]> {
    const started: Instance[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env = serverEnv(db, tempDir('taskhook-ops-'), port, {
        REDIS_URL: redisUrl as string,
        TASKHOOK_PUBLIC_URL: base,
        ...extra,
      });
      started.push({ base, server: await startServer(env, base) });
    }
    return started;
  }
  let drop: () => Promise<void> = async () => undefined;
  let key = '';
  let agentId = '';

  const post = (base: string, path: string, body: unknown) =>
    request(`${base}${path}`, {
      method: 'POST',
      dispatcher: http,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });

  beforeAll(async () => {
    ensureBuilt();
    const own = await ownDatabase({ name: 'postgres', databaseUrl: POSTGRES_URL });
    drop = own.drop;
    database = own.database;
    instances.push(...(await startInstances(database, { TASKHOOK_SWEEP_INTERVAL_MS: '200' })));
    const cliEnv = serverEnv(database, tempDir('taskhook-ops-'), 0);
    const email = uniqueEmail();
    await runCli(['user', 'create', '--email', email, '--password', 'ops password 1', '--verified'], cliEnv);
    key = (await runCli(['key', 'create', '--email', email, '--name', 'ops'], cliEnv)).key as string;
    const created = await post((instances[0] as Instance).base, '/agent', { name: 'ops', concurrency: 64 });
    expect(created.statusCode).toBe(201);
    agentId = ((await created.body.json()) as { uuid: string }).uuid;
  }, 300_000);

  afterAll(async () => {
    for (const instance of instances) await killHard(instance.server);
    await http.close();
    await drop();
  });

  it('completes every acknowledged task exactly once while one instance is killed', async () => {
    const runs = new Map<string, number>();
    const workers: RunningWorker[] = [];
    for (let i = 0; i < WORKERS; i++) {
      workers.push(
        runWorker({
          baseUrl: (instances[i % 3] as Instance).base,
          apiKey: key,
          agentId,
          concurrency: 8,
          leaseSeconds: 10,
          waitSeconds: 2,
          handleSignals: false,
          log: () => undefined,
          async handler(task) {
            runs.set(task.task_id, (runs.get(task.task_id) ?? 0) + 1);
            return { summary: `done ${task.task_id}` };
          },
        }),
      );
    }

    const acknowledged: Array<{ taskId: string; instance: number }> = [];
    let next = 0;
    let killed = false;
    const victim = instances[2] as Instance;
    async function client() {
      while (next < TASKS) {
        const n = next++;
        const instance = n % 3;
        if (!killed && acknowledged.length >= TASKS / 2) {
          killed = true;
          await killHard(victim.server);
        }
        try {
          const res = await post((instances[instance] as Instance).base, `/agent/request/${agentId}`, {
            message: `task ${n}`,
          });
          const body = (await res.body.json()) as { task_id?: string };
          if (res.statusCode === 202 && body.task_id) acknowledged.push({ taskId: body.task_id, instance });
        } catch (err) {
          // Only the killed instance may refuse or drop a request.
          if (!(killed && instance === 2)) throw err;
        }
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, client));
    expect(killed).toBe(true);
    expect(acknowledged.filter((a) => a.instance === 2).length).toBeGreaterThan(0);

    // Every acknowledged task, those of the killed instance included, is completed through the others.
    const survivor = (instances[0] as Instance).base;
    const pending = new Set(acknowledged.map((a) => a.taskId));
    const last = new Map<string, unknown>();
    const deadline = Date.now() + 240_000;
    while (pending.size > 0 && Date.now() < deadline) {
      for (const taskId of [...pending].slice(0, 200)) {
        const got = await request(`${survivor}/agent/${agentId}/task/${taskId}`, {
          dispatcher: http,
          headers: { 'x-api-key': key },
        });
        const view = (await got.body.json()) as { status: string; result?: { summary?: string } };
        expect(got.statusCode).toBe(200);
        last.set(taskId, view);
        if (view.status === 'completed') {
          expect(view.result?.summary).toBe(`done ${taskId}`);
          pending.delete(taskId);
        }
      }
      if (pending.size > 0) await sleep(200);
    }
    await Promise.all(workers.map((w) => w.stop()));
    expect({ acknowledged: acknowledged.length, notCompleted: [...pending].map((id) => last.get(id)) }).toEqual({
      acknowledged: acknowledged.length,
      notCompleted: [],
    });
    // A handler may run twice when its first run's report was cut off with its instance (or its
    // lease ran out); the task is still completed once: its one result is what a run produced.
    for (const { taskId } of acknowledged) expect(runs.get(taskId) ?? 0).toBeGreaterThanOrEqual(1);
  }, 600_000);

  it("counts one user's requests across instances: 1,100 requests get exactly 1,000 successes", async () => {
    const limited = await startInstances(database, { TASKHOOK_RATE_LIMIT: String(LIMIT) });
    try {
      const cliEnv = serverEnv(database, tempDir('taskhook-ops-'), 0);
      const email = uniqueEmail();
      await runCli(['user', 'create', '--email', email, '--password', 'ops password 1', '--verified'], cliEnv);
      const userKey = (await runCli(['key', 'create', '--email', email, '--name', 'ops'], cliEnv)).key as string;
      // A new user starts with an empty window; keep the burst inside one fixed minute.
      if (60_000 - (Date.now() % 60_000) < 20_000) await sleep(60_000 - (Date.now() % 60_000) + 50);
      const statuses: number[] = [];
      let sent = 0;
      async function client() {
        while (sent < LIMIT + 100) {
          const n = sent++;
          const res = await request(`${(limited[n % 3] as Instance).base}/agent/list`, {
            dispatcher: http,
            headers: { 'x-api-key': userKey },
          });
          await res.body.dump();
          statuses.push(res.statusCode);
        }
      }
      await Promise.all(Array.from({ length: 32 }, client));
      expect(statuses.filter((s) => s === 200).length).toBe(LIMIT);
      expect(statuses.filter((s) => s === 429).length).toBe(100);
    } finally {
      for (const instance of limited) await killHard(instance.server);
    }
  }, 180_000);
});
