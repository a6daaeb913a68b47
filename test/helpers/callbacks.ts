import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Config } from '../../src/config.js';
import { buildTestApp, call, type TestApp } from './app.js';
import { ownDatabase, type TestDatabase } from './databases.js';
import { createAgent, createUser, type TestUser } from './factories.js';
import { cancelTask, submitTask, workerHeaders } from './tasks.js';

/** One request a receiver got, as it arrived. */
export interface CapturedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly the bytes that were signed. */
  body: string;
  /** When it arrived in full (epoch ms). */
  receivedAt: number;
}

/** What a receiver answers to its `index`-th request (0-based); null: nothing, ever (the request hangs). */
export type Answer = (
  request: CapturedRequest,
  index: number,
) => { status: number; headers?: Record<string, string>; body?: string } | null;

export interface Receiver {
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  port: number;
  requests: CapturedRequest[];
  /** Requests left unanswered whose connection the sender closed. */
  hungUp: CapturedRequest[];
  close(): Promise<void>;
}

/**
 * A callback receiver: a real `node:http` server on 127.0.0.1 that records every request and
 * answers per `answer` (200 by default). `port` 0 picks a free one.
 */
export function startReceiver(answer: Answer = () => ({ status: 200 }), port = 0): Promise<Receiver> {
  const requests: CapturedRequest[] = [];
  const hungUp: CapturedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const captured = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      const index = requests.push(captured) - 1;
      const reply = answer(captured, index);
      if (reply) res.writeHead(reply.status, reply.headers).end(reply.body);
      else res.once('close', () => hungUp.push(captured));
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as AddressInfo).port;
      resolve({
        url: `http://127.0.0.1:${bound}/hook`,
        port: bound,
        requests,
        hungUp,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** The Standard Webhooks headers of a captured request. */
export function webhookHeaders(request: CapturedRequest): Record<string, string> {
  const pick = (name: string) => {
    const value = request.headers[name];
    if (typeof value !== 'string') throw new Error(`the callback has no ${name} header`);
    return value;
  };
  return {
    'webhook-id': pick('webhook-id'),
    'webhook-timestamp': pick('webhook-timestamp'),
    'webhook-signature': pick('webhook-signature'),
  };
}

/** Verifies a captured callback with the `standardwebhooks` package; answers the parsed body or throws. */
export function verifyCallback(
  secret: string,
  request: CapturedRequest,
  override: Partial<Record<string, string>> = {},
): unknown {
  return new Webhook(secret).verify(request.body, { ...webhookHeaders(request), ...override } as Record<
    string,
    string
  >);
}

/**
 * Polls `probe` until it answers something other than undefined; throws with `what` once
 * `timeoutMs` of real time pass first.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Moved to databases.ts; still exported here for files that import it from its first home. */
export { ownDatabase };

/** One entry of `GET /agent/:id/task/:taskId/deliveries`. */
export interface Delivery {
  delivery_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: Array<{ at: string; status_code: number | null; duration_ms: number; error: string | null }>;
  next_attempt_at: string | null;
}

/** Answers the given statuses in turn, then the last one for ever. */
export const answering =
  (...statuses: number[]): Answer =>
  (_request, index) => ({ status: statuses[Math.min(index, statuses.length - 1)] ?? 200 });

/** The task a captured callback is about. */
export const taskIdOf = (request: CapturedRequest) =>
  (JSON.parse(request.body) as { data: { task_id: string } }).data.task_id;

/**
 * For a describe block: an app with `config` on storage of its own (see ownDatabase), receivers
 * closed after the block, and the calls callback tests make.
 */
export function useCallbackApp(database: TestDatabase, config: Partial<Config>) {
  const receivers: Receiver[] = [];
  let drop: () => Promise<void> = async () => undefined;
  const h = {
    t: undefined as unknown as TestApp,
    storage: database,

    async receiver(answer?: Answer): Promise<Receiver> {
      const r = await startReceiver(answer);
      receivers.push(r);
      return r;
    },

    async signingSecret(user: TestUser): Promise<string> {
      const res = await call(h.t.app, 'GET', '/auth/webhook_signing_secret', { token: user.token });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().secret;
    },

    async deliveries(user: TestUser, agent: string, taskId: string): Promise<Delivery[]> {
      const path = `/agent/${agent}/task/${taskId}/deliveries`;
      const res = await call(h.t.app, 'GET', path, { headers: workerHeaders(user) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().deliveries;
    },

    /** The task's deliveries once there are `count` and none is pending any more. */
    settled(user: TestUser, agent: string, taskId: string, count = 1): Promise<Delivery[]> {
      return eventually(async () => {
        const list = await h.deliveries(user, agent, taskId);
        return list.length >= count && list.every((d) => d.status !== 'pending') ? list : undefined;
      }, `${count} settled deliveries of task ${taskId}`);
    },

    /** A user (new unless given), a new agent, and a queued task whose callbacks go to `url`. */
    async webhookTask(url: string, user?: TestUser) {
      const owner = user ?? (await createUser(h.t));
      const agent = (await createAgent(h.t, owner)).uuid;
      const { task_id } = await submitTask(h.t, owner, agent, { callback_mode: 'webhook', webhook_url: url });
      return { user: owner, agent, taskId: task_id };
    },

    async cancel(user: TestUser, agent: string, taskId: string): Promise<void> {
      expect((await cancelTask(h.t, user, agent, taskId)).statusCode).toBe(200);
    },
  };

  beforeAll(async () => {
    const own = await ownDatabase(database);
    drop = own.drop;
    h.storage = own.database;
    h.t = await buildTestApp(h.storage, { config });
  });
  afterAll(async () => {
    await h.t?.close();
    await Promise.all(receivers.map((r) => r.close()));
    await drop();
  });
  return h;
}
