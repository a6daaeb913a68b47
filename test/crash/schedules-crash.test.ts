import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES, tempDir } from '../helpers/databases.js';
import { uniqueEmail } from '../helpers/factories.js';
import {
  ensureBuilt,
  freePort,
  killHard,
  runCli,
  type ServerProcess as Server,
  serverEnv,
  startServer,
} from '../helpers/server-process.js';

/*
 * A schedule's decision (claim, run, task) is one transaction: the real server, firing a schedule
 * every second and answering manual runs, is killed with SIGKILL at arbitrary moments (between
 * decisions and answers among them). After restarts on the same storage every run names a task
 * that exists, every task of the schedule has exactly one run, no occurrence was decided twice,
 * and every 202 of "run now" is a task.
 */

const CYCLES = 3;

beforeAll(() => ensureBuilt(), 180_000);

describe.each(DATABASES)('schedules under SIGKILL on $name', (db) => {
  let dataDir: string;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let key: string;
  let server: Server | undefined;

  async function api(method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) {
    const res = await request(`${base}${url}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? JSON.parse(text) : {} };
  }

  async function all(url: string, field: string): Promise<Array<Record<string, unknown>>> {
    const out: Array<Record<string, unknown>> = [];
    for (let page = 1; ; page++) {
      const res = await api('GET', `${url}${url.includes('?') ? '&' : '?'}page=${page}&limit=100`);
      expect(res.status).toBe(200);
      out.push(...res.json[field]);
      if (res.json[field].length < 100) return out;
    }
  }

  beforeAll(async () => {
    dataDir = tempDir('taskhook-sched-crash-');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = serverEnv(db, dataDir, port, { TASKHOOK_SCHEDULE_MIN_INTERVAL_SECONDS: '1' });
    const email = uniqueEmail();
    await runCli(['user', 'create', '--email', email, '--password', `pw-${randomUUID()}`, '--verified'], env);
    key = (await runCli(['key', 'create', '--email', email, '--name', 'crash'], env)).key as string;
    server = await startServer(env, base);
  }, 120_000);

  afterAll(async () => {
    await killHard(server).catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('decides each occurrence once and loses no acknowledged run', async () => {
    const agent = (await api('POST', '/agent', { name: 'crash schedules' })).json.uuid as string;
    const created = await api('POST', `/v1/agent/${agent}/schedules`, {
      name: 'every second',
      cron: '* * * * * *',
      message: 'tick {{schedule.scheduled_for}}',
      catch_up_seconds: 60,
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const schedule = created.json.uuid as string;
    const acked = new Set<string>();

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      if (cycle > 0) server = await startServer(env, base);
      const stop = Date.now() + 1500 + cycle * 300;
      await Promise.all(
        // Paced so the whole run stays under the 1,000 runs the run log keeps (older ones are trimmed,
        // and every task is then checked against its run).
        Array.from({ length: 2 }, async () => {
          while (Date.now() < stop) {
            const res = await api('POST', `/v1/agent/${agent}/schedules/${schedule}/run`).catch(() => null);
            if (res?.status === 202) acked.add(res.json.task_id);
            await sleep(15);
          }
        }),
      );
      // Killed while the clock and the last manual runs may be mid-transaction.
      await killHard(server);
    }
    server = await startServer(env, base);
    await sleep(1500);
    // Stop the clock's firing before reading the lists page by page: rows added every second while
    // paging would shift the pages and show a run twice (or not at all).
    const paused = await api('PATCH', `/v1/agent/${agent}/schedules/${schedule}`, { enabled: false });
    expect(paused.status, JSON.stringify(paused.json)).toBe(200);
    await sleep(1200);

    const runs = await all(`/v1/agent/${agent}/schedules/${schedule}/runs`, 'runs');
    const tasks = await all(`/agent/${agent}/tasks`, 'tasks');
    const taskIds = new Set(tasks.map((t) => t.task_id as string));
    const runTasks = runs.filter((r) => r.task_id !== null).map((r) => r.task_id as string);
    expect(runs.some((r) => r.manual === false)).toBe(true);
    expect(new Set(runTasks).size).toBe(runTasks.length);
    for (const id of runTasks) expect(taskIds.has(id)).toBe(true);
    expect(taskIds.size).toBe(runTasks.length);
    for (const id of acked) expect(taskIds.has(id)).toBe(true);
    const clockRuns = runs.filter((r) => r.manual === false).map((r) => r.scheduled_for);
    expect(new Set(clockRuns).size).toBe(clockRuns.length);
  }, 120_000);
});
