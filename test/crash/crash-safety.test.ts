import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
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
 * A 2xx means the write is committed to storage, and a crash of any process at any moment loses
 * no accepted task. The real server runs as a child process under load and is killed
 * with SIGKILL (no shutdown hook, no drain); after a restart on the same storage every response
 * the clients received as 2xx must be reflected in storage.
 */

const CYCLES = 3;
const CLIENTS = 16;
/** Per-client cap on submits in one cycle, so a server that never dies cannot loop forever. */
const MAX_SUBMITS_PER_CLIENT = 400;
/** Kill once this many 202s arrived in the cycle (plus a bit more each cycle)... */
const KILL_AFTER = 200;
/** ...or after this long at the latest (a loaded CI machine), provided some were acknowledged. */
const LOAD_WINDOW_MS = 8_000;
const MIN_ACKED = 50;
const COMPLETES = 20;
const COMPLETE_ROUNDS = 2;

/** Runs `fn` over `items` with at most `width` calls in flight. */
async function mapLimit<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i] as T);
      }
    }),
  );
  return out;
}

beforeAll(() => ensureBuilt(), 180_000);

describe.each(DATABASES)('crash safety on $name (SIGKILL of the real server)', (db) => {
  let dataDir: string;
  let port: number;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let key: string;
  let server: Server | undefined;
  let dispatcher: Agent;

  async function api(
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await request(`${base}${url}`, {
      method,
      dispatcher,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? JSON.parse(text) : {} };
  }

  async function restart(): Promise<void> {
    await killHard(server);
    await dispatcher?.destroy();
    dispatcher = new Agent({ connections: CLIENTS * 2, keepAliveTimeout: 10_000, pipelining: 1 });
    server = await startServer(env, base);
  }

  async function createAgent(body: Record<string, unknown>): Promise<string> {
    // A test that failed midway may have left the server dead.
    if (!server || server.child.exitCode !== null || server.child.signalCode !== null) await restart();
    const res = await api('POST', '/agent', body);
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    return res.json.uuid as string;
  }

  beforeAll(async () => {
    dataDir = tempDir('taskhook-crash-');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = serverEnv(db, dataDir, port);
    const email = uniqueEmail();
    await runCli(['user', 'create', '--email', email, '--password', `pw-${randomUUID()}`, '--verified'], env);
    const created = await runCli(['key', 'create', '--email', email, '--name', 'crash'], env);
    key = created.key as string;
    expect(key).toMatch(/^sk_service_/);
    await restart();
  }, 120_000);

  afterAll(async () => {
    await killHard(server).catch(() => undefined);
    await dispatcher?.destroy().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no acknowledged submit across repeated SIGKILLs under concurrent load', async () => {
    const agent = await createAgent({ name: 'crash' });
    /** task_id → the message it was submitted with, for every 202 of every cycle. */
    const acked = new Map<string, string>();
    const verified = new Set<string>();
    let sent = 0;
    let seq = 0;

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const live = server as Server;
      let stop = false;
      let ackedThisCycle = 0;
      let failedThisCycle = 0;
      const killAfter = KILL_AFTER + cycle * 50;
      const deadline = Date.now() + LOAD_WINDOW_MS + 5_000;
      let reached!: () => void;
      const threshold = new Promise<void>((resolve) => {
        reached = resolve;
      });

      const client = async () => {
        for (let i = 0; i < MAX_SUBMITS_PER_CLIENT && !stop && Date.now() < deadline; i++) {
          const message = `task ${seq++}`;
          sent++;
          try {
            const res = await api('POST', `/agent/request/${agent}`, { message });
            if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.json)}`);
            const taskId = res.json.task_id as string;
            expect(res.json.status).toBe('queued');
            acked.set(taskId, message);
            if (++ackedThisCycle >= killAfter) reached();
          } catch (err) {
            // Connection reset/refused after the kill: this submit was simply not acknowledged.
            if (!live.killed) throw new Error(`submit failed while the server was up: ${err}\n${live.stderr()}`);
            failedThisCycle++;
            await sleep(5);
          }
        }
      };
      const clients = Array.from({ length: CLIENTS }, client);
      const allDone = Promise.all(clients);
      // Kill while the clients are still firing: requests are in flight, batches mid-commit.
      await Promise.race([threshold, allDone, sleep(LOAD_WINDOW_MS)]);
      expect(live.child.exitCode ?? live.child.signalCode, `the server died on its own:\n${live.stderr()}`).toBeNull();
      expect(ackedThisCycle, 'too few submits acknowledged before the kill').toBeGreaterThanOrEqual(MIN_ACKED);
      await killHard(live);
      expect(live.child.signalCode, `the server died on its own:\n${live.stderr()}`).toBe('SIGKILL');
      // Give the clients a moment to run into the dead server, then stop them.
      await sleep(50);
      stop = true;
      await allDone;
      console.info(
        `[${db.name}] cycle ${cycle + 1}: ${ackedThisCycle} submits acknowledged before SIGKILL, ` +
          `${failedThisCycle} refused/reset, ${acked.size} acknowledged in total`,
      );

      await restart();

      // Every task acknowledged in this cycle is there, queued, with its message.
      const fresh = [...acked.keys()].filter((id) => !verified.has(id));
      const missing: string[] = [];
      await mapLimit(fresh, CLIENTS, async (id) => {
        const res = await api('GET', `/agent/${agent}/task/${id}`);
        if (res.status === 404) return missing.push(id);
        expect(res.status, JSON.stringify(res.json)).toBe(200);
        expect(res.json).toMatchObject({ task_id: id, status: 'queued', agent_uuid: agent, message: acked.get(id) });
      });
      expect(missing, `${missing.length} of ${fresh.length} acknowledged tasks were lost`).toEqual([]);
      for (const id of fresh) verified.add(id);

      // Cross-check through the listing: every task acknowledged in any cycle so far is still there
      // and queued with its message, and there are no more tasks than submits.
      const listed = new Map<string, { status: string; message: string }>();
      let total = -1;
      for (let page = 1; page <= 100; page++) {
        const res = await api('GET', `/agent/${agent}/tasks?limit=100&page=${page}`);
        expect(res.status).toBe(200);
        const pagination = res.json.pagination as { total: number; total_pages: number };
        total = pagination.total;
        for (const task of res.json.tasks as Array<{ task_id: string; status: string; message: string }>) {
          listed.set(task.task_id, task);
        }
        if (page >= pagination.total_pages) break;
      }
      expect(total).toBeGreaterThanOrEqual(acked.size);
      expect(total).toBeLessThanOrEqual(sent);
      expect(listed.size).toBe(total);
      const lost = [...acked].filter(([id, message]) => {
        const task = listed.get(id);
        return task?.status !== 'queued' || task.message !== message;
      });
      expect(lost, `${lost.length} of ${acked.size} acknowledged tasks missing from the listing`).toEqual([]);
    }
  }, 90_000);

  it('keeps every acknowledged complete across a SIGKILL right after the first 200', async () => {
    const agent = await createAgent({ name: 'crash-complete', concurrency: COMPLETES });
    for (let round = 0; round < COMPLETE_ROUNDS; round++) {
      const submitted = await Promise.all(
        Array.from({ length: COMPLETES }, async (_, i) => {
          const res = await api('POST', `/agent/request/${agent}`, { message: `work ${round}.${i}` });
          expect(res.status).toBe(202);
          return res.json.task_id as string;
        }),
      );
      const claim = await api('POST', `/agent/${agent}/tasks/claim`, { max_tasks: COMPLETES });
      expect(claim.status).toBe(200);
      const leases = claim.json.tasks as Array<{ task_id: string; lease_id: string }>;
      expect(leases.map((t) => t.task_id).sort()).toEqual([...submitted].sort());

      // All completes at once; the server is killed the moment the first 200 is in.
      const live = server as Server;
      const completed = new Map<string, unknown>();
      await Promise.all(
        leases.map(async (t, i) => {
          const result = { summary: `ok ${round}.${i}`, findings: [] };
          try {
            const res = await api('POST', `/agent/${agent}/task/${t.task_id}/complete`, {
              lease_id: t.lease_id,
              result,
            });
            // A 200 that arrives after the kill was still sent by the server: it counts too.
            expect(res.status, JSON.stringify(res.json)).toBe(200);
            expect(res.json.status).toBe('completed');
            completed.set(t.task_id, result);
            if (!live.killed) {
              live.killed = true;
              live.child.kill('SIGKILL');
            }
          } catch (err) {
            if (!live.killed) throw err;
          }
        }),
      );
      await live.exited;
      expect(live.child.signalCode).toBe('SIGKILL');
      expect(completed.size).toBeGreaterThanOrEqual(1);

      await restart();
      const after = await Promise.all(
        leases.map(async (t) => {
          const res = await api('GET', `/agent/${agent}/task/${t.task_id}`);
          expect(res.status).toBe(200);
          return { ...res.json, task_id: t.task_id, status: res.json.status as string };
        }),
      );
      for (const task of after) {
        if (completed.has(task.task_id)) {
          expect(task, 'an acknowledged complete was lost').toMatchObject({
            status: 'completed',
            result: completed.get(task.task_id),
            completed_at: expect.any(String),
          });
        } else {
          // Not acknowledged: either outcome may have been committed, but nothing in between.
          expect(['running', 'completed']).toContain(task.status);
        }
      }
      console.info(
        `[${db.name}] complete round ${round + 1}: ${completed.size} of ${COMPLETES} completes acknowledged, ` +
          `${after.filter((t) => t.status === 'completed').length} completed after restart`,
      );
      // Leftover running tasks hold concurrency slots of the agent until their leases expire.
      for (const task of after) {
        if (task.status !== 'running') continue;
        const lease = leases.find((l) => l.task_id === task.task_id);
        const res = await api('POST', `/agent/${agent}/task/${task.task_id}/complete`, {
          lease_id: lease?.lease_id,
          result: { summary: 'late', findings: [] },
        });
        expect(res.status).toBe(200);
      }
    }
  }, 45_000);
});
