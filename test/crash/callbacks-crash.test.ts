import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  type CapturedRequest,
  type Delivery,
  eventually,
  type Receiver,
  startReceiver,
  taskIdOf,
  verifyCallback,
} from '../helpers/callbacks.js';
import { DATABASES, ownDatabase, type TestDatabase, tempDir } from '../helpers/databases.js';
import {
  serverEnv as baseEnv,
  ensureBuilt,
  freePort,
  killHard,
  runCli,
  type ServerProcess as Server,
  startServer,
} from '../helpers/server-process.js';

/** The server's environment with fast callback retries to receivers on this machine. */
const serverEnv = (db: TestDatabase, dataDir: string, port: number) =>
  baseEnv(db, dataDir, port, {
    TASKHOOK_ALLOW_PRIVATE_URLS: 'true',
    TASKHOOK_CALLBACK_RETRY_SCHEDULE: '1,1,1,1',
    TASKHOOK_CALLBACK_TIMEOUT_MS: '1000',
  });

import { uniqueEmail } from '../helpers/factories.js';

/*
 * Callbacks are part of what a crash must not lose: deliveries survive restarts. While the receiver is down, tasks are cancelled (their callbacks fail and wait for a
 * retry); the real server is killed with SIGKILL; the receiver comes up; after a restart on the
 * same storage every callback arrives, once, with the webhook-id it had before the crash.
 */

const TASKS = 6;

beforeAll(() => ensureBuilt(), 180_000);

describe.each(DATABASES)('callbacks across a SIGKILL of the real server on $name', (database) => {
  let dataDir: string;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let server: Server | undefined;
  let drop: () => Promise<void> = async () => undefined;
  const receivers: Receiver[] = [];
  const credentials = { key: '', token: '', secret: '' };

  async function api(
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    headers: Record<string, string> = { 'x-api-key': credentials.key },
  ) {
    const res = await request(`${base}${url}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? JSON.parse(text) : {} };
  }

  beforeAll(async () => {
    // The child sends every due callback of its storage: on PostgreSQL give it a database of its own.
    const own = await ownDatabase(database);
    drop = own.drop;
    dataDir = tempDir('taskhook-callbacks-crash-');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = serverEnv(own.database, dataDir, port);
    const email = uniqueEmail();
    const password = `pw-${randomUUID()}`;
    await runCli(['user', 'create', '--email', email, '--password', password, '--verified'], env);
    credentials.key = (await runCli(['key', 'create', '--email', email, '--name', 'crash'], env)).key as string;
    server = await startServer(env, base);
    const login = await api('POST', '/auth/login', { email, password }, {});
    expect(login.status, JSON.stringify(login.json)).toBe(200);
    const secret = await api('GET', '/auth/webhook_signing_secret', undefined, {
      authorization: `Bearer ${login.json.token}`,
    });
    expect(secret.status).toBe(200);
    credentials.secret = secret.json.secret;
  }, 120_000);

  afterAll(async () => {
    await killHard(server).catch(() => undefined);
    await Promise.all(receivers.map((r) => r.close()));
    await drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function receiverOn(port: number, answer?: Answer): Promise<Receiver> {
    const r = await startReceiver(answer, port);
    receivers.push(r);
    return r;
  }

  async function deliveries(agent: string, taskId: string): Promise<Delivery[]> {
    const res = await api('GET', `/agent/${agent}/task/${taskId}/deliveries`);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json.deliveries;
  }

  /** A new agent and TASKS tasks whose callbacks go to `url`, all cancelled: one callback each. */
  async function cancelledTasks(url: string): Promise<{ agent: string; taskIds: string[] }> {
    const created = await api('POST', '/agent', { name: 'callbacks-crash' });
    expect(created.status).toBe(201);
    const agent = created.json.uuid as string;
    const taskIds: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const body = { message: `task ${i}`, callback_mode: 'webhook', webhook_url: url };
      const submit = await api('POST', `/agent/request/${agent}`, body);
      expect(submit.status, JSON.stringify(submit.json)).toBe(202);
      taskIds.push(submit.json.task_id);
    }
    for (const id of taskIds) expect((await api('POST', `/agent/${agent}/task/${id}/cancel`)).status).toBe(200);
    return { agent, taskIds };
  }

  /** Each task's single delivery, pending, as listed now (before the crash). */
  async function pendingIds(agent: string, taskIds: string[]): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    for (const id of taskIds) {
      const list = await deliveries(agent, id);
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ event_type: 'task.cancelled', status: 'pending' });
      ids.set(id, list[0]?.delivery_id as string);
    }
    return ids;
  }

  async function crashAndRestart(beforeRestart: () => Promise<void>): Promise<void> {
    await killHard(server);
    expect(server?.child.signalCode, `the server died on its own:\n${server?.stderr()}`).toBe('SIGKILL');
    await beforeRestart();
    server = await startServer(env, base);
  }

  /**
   * After the restart: every task's delivery settles as delivered, keeps the id it had before the
   * crash, and `receiver` got it exactly once, signed with the account's secret.
   */
  async function expectEachDeliveredOnce(agent: string, before: Map<string, string>, receiver: Receiver) {
    const after = new Map<string, Delivery>();
    for (const [id] of before) {
      const list = await eventually(
        async () => {
          const found = await deliveries(agent, id);
          return found.every((d) => d.status !== 'pending') ? found : undefined;
        },
        `the callback of task ${id} after the restart`,
        30_000,
      );
      expect(list).toHaveLength(1);
      after.set(id, list[0] as Delivery);
    }
    const byTask = new Map<string, CapturedRequest[]>();
    for (const req of receiver.requests) {
      const taskId = taskIdOf(req);
      byTask.set(taskId, [...(byTask.get(taskId) ?? []), req]);
    }
    expect([...byTask.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [id, deliveryId] of before) {
      const delivery = after.get(id) as Delivery;
      expect(delivery).toMatchObject({ delivery_id: deliveryId, status: 'delivered', next_attempt_at: null });
      expect(delivery.attempts.at(-1)).toMatchObject({ status_code: 200, error: null });
      const got = byTask.get(id) ?? [];
      expect(got).toHaveLength(1);
      const req = got[0] as CapturedRequest;
      expect(req.headers['webhook-id']).toBe(deliveryId);
      expect(verifyCallback(credentials.secret, req)).toMatchObject({
        type: 'task.cancelled',
        data: { task_id: id, status: 'cancelled' },
      });
    }
    expect(receiver.requests).toHaveLength(before.size);
    return after;
  }

  it('delivers callbacks that failed while the receiver was down, once each, after a restart', async () => {
    const port = await freePort();
    const { agent, taskIds } = await cancelledTasks(`http://127.0.0.1:${port}/hook`);
    // The receiver is down: each callback is tried, refused, and waits for its next attempt.
    for (const id of taskIds) {
      await eventually(
        async () => ((await deliveries(agent, id))[0]?.attempts.length ?? 0) > 0 || undefined,
        `a refused first attempt for task ${id}`,
        10_000,
      );
    }
    const before = await pendingIds(agent, taskIds);

    let up: Receiver | undefined;
    await crashAndRestart(async () => {
      up = await receiverOn(port);
    });
    const after = await expectEachDeliveredOnce(agent, before, up as Receiver);
    for (const delivery of after.values()) {
      expect(delivery.attempts.length).toBeGreaterThanOrEqual(2);
      expect(delivery.attempts.slice(0, -1).every((a) => a.status_code === null && a.error !== null)).toBe(true);
    }
  }, 90_000);

  it('sends again, with the same webhook-id, a callback that was in flight when the server died', async () => {
    const port = await freePort();
    // Takes each request and never answers: the server dies holding every attempt's lease.
    const hanging = await receiverOn(port, () => null);
    const { agent, taskIds } = await cancelledTasks(`http://127.0.0.1:${port}/hook`);
    const inFlight = await eventually(
      () => (hanging.requests.length >= TASKS ? hanging.requests.slice() : undefined),
      'every callback to reach the hanging receiver',
      10_000,
    );
    let up: Receiver | undefined;
    await crashAndRestart(async () => {
      await hanging.close();
      up = await receiverOn(port);
    });
    const before = new Map(inFlight.map((req) => [taskIdOf(req), req.headers['webhook-id'] as string]));
    expect([...before.keys()].sort()).toEqual([...taskIds].sort());
    await expectEachDeliveredOnce(agent, before, up as Receiver);
  }, 90_000);
});
