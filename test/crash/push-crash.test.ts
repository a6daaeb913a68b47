import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, eventually, type Receiver, startReceiver, verifyCallback } from '../helpers/callbacks.js';
import { DATABASES, ownDatabase, tempDir } from '../helpers/databases.js';
import { uniqueEmail } from '../helpers/factories.js';
import { type PushBody, pushBodyOf } from '../helpers/push-agent.js';
import {
  serverEnv as baseEnv,
  ensureBuilt,
  freePort,
  killHard,
  runCli,
  type ServerProcess,
  startServer,
} from '../helpers/server-process.js';

/*
 * A push in flight when the process dies: the real server POSTs each task to an http agent that
 * never answers the first attempt; the server is killed with SIGKILL mid-push and started again on
 * the same storage. Each task's lease runs out, its attempt is redone once (attempt 2, a new
 * lease), and the agent's answer completes it: the receiver counts one POST per lease id.
 */

const TASKS = 4;

beforeAll(() => ensureBuilt(), 180_000);

describe.each(DATABASES)('http pushes across a SIGKILL of the real server on $name', (database) => {
  let dataDir: string;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let server: ServerProcess | undefined;
  let receiver: Receiver;
  let drop: () => Promise<void> = async () => undefined;
  const credentials = { key: '', secret: '' };

  // The first attempt hangs (the server dies while it waits); any later one completes the task.
  const agentAnswer: Answer = (req) => {
    const body = pushBodyOf(req);
    if (body.type !== 'task.run' || body.data.attempt === 1) return null;
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ result: { summary: `done on attempt ${body.data.attempt}` } }),
    };
  };

  async function api(method: 'GET' | 'POST', url: string, body?: unknown, headers?: Record<string, string>) {
    const res = await request(`${base}${url}`, {
      method,
      headers: {
        ...(headers ?? { 'x-api-key': credentials.key }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? JSON.parse(text) : {} };
  }

  beforeAll(async () => {
    // The child pushes every http agent's tasks of its storage: on PostgreSQL a database of its own.
    const own = await ownDatabase(database);
    drop = own.drop;
    receiver = await startReceiver(agentAnswer);
    dataDir = tempDir('taskhook-push-crash-');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = baseEnv(own.database, dataDir, port, {
      TASKHOOK_ALLOW_PRIVATE_URLS: 'true',
      TASKHOOK_SWEEP_INTERVAL_MS: '200',
    });
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
    credentials.secret = secret.json.secret;
  }, 120_000);

  afterAll(async () => {
    await killHard(server).catch(() => undefined);
    await receiver?.close();
    await drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('redoes the attempt in flight once after a restart, never twice for one lease', async () => {
    const runtime = { type: 'http', url: receiver.url, lease_seconds: 2 };
    const created = await api('POST', '/agent', { name: 'push-crash', runtime });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const agent = created.json.uuid as string;
    const taskIds: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const submit = await api('POST', `/agent/request/${agent}`, { message: `task ${i}` });
      expect(submit.status, JSON.stringify(submit.json)).toBe(202);
      taskIds.push(submit.json.task_id);
    }
    // Every task's first POST is in flight (held open by the agent) when the server dies.
    await eventually(() => (receiver.requests.length >= TASKS ? true : undefined), 'the first POSTs', 30_000);
    await killHard(server);
    expect(server?.child.signalCode, `the server died on its own:\n${server?.stderr()}`).toBe('SIGKILL');
    server = await startServer(env, base);

    for (const id of taskIds) {
      const task = await eventually(
        async () => {
          const got = await api('GET', `/agent/${agent}/task/${id}`);
          return got.json.status === 'completed' ? got.json : undefined;
        },
        `task ${id} completed after the restart`,
        30_000,
      );
      expect(task.result.summary).toBe('done on attempt 2');
    }

    const runs = receiver.requests.map((r) => ({ req: r, body: verifyCallback(credentials.secret, r) as PushBody }));
    expect(runs.every(({ body }) => body.type === 'task.run')).toBe(true);
    const perLease = new Map<string, number>();
    for (const { req, body } of runs) {
      expect(req.headers['webhook-id']).toBe(body.data.lease_id);
      perLease.set(body.data.lease_id, (perLease.get(body.data.lease_id) ?? 0) + 1);
    }
    expect([...perLease.values()].every((n) => n === 1)).toBe(true);
    for (const id of taskIds) {
      const attempts = runs.filter(({ body }) => body.data.task_id === id).map(({ body }) => body.data.attempt);
      expect(attempts).toEqual([1, 2]);
    }
  }, 120_000);
});
