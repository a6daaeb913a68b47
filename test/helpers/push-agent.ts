import { afterAll, beforeAll } from 'vitest';
import { buildTestApp, call, type TestApp } from './app.js';
import { type Answer, type CapturedRequest, eventually, type Receiver, startReceiver } from './callbacks.js';
import { ownDatabase, type TestDatabase } from './databases.js';
import { createAgent, createUser, type TestUser } from './factories.js';

/** The body of a webhook the http runtime sent: `task.run` or `task.cancelled`. */
export interface PushBody {
  type: 'task.run' | 'task.cancelled';
  timestamp: string;
  data: {
    task_id: string;
    agent_uuid: string;
    lease_id: string;
    message: string;
    messages: Array<{ role: 'user' | 'agent'; content: string; created_at: string }>;
    priority: number;
    metadata: Record<string, unknown>;
    concurrency_key: string | null;
    attempt: number;
    lease_expires_at: string;
    timeout_at: string;
    traceparent: string;
    urls: { task: string; progress: string; input_request: string; complete: string; fail: string };
  };
}

export const pushBodyOf = (request: CapturedRequest) => JSON.parse(request.body) as PushBody;

/** The `task.run` POSTs the receiver got for a task, in order. */
export const runsOf = (requests: CapturedRequest[], taskId: string) =>
  requests.filter((r) => {
    const body = pushBodyOf(r);
    return body.type === 'task.run' && body.data.task_id === taskId;
  });

/** The `task.cancelled` POSTs the receiver got for a task. */
export const cancelsOf = (requests: CapturedRequest[], taskId: string) =>
  requests.filter((r) => {
    const body = pushBodyOf(r);
    return body.type === 'task.cancelled' && body.data.task_id === taskId;
  });

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/**
 * An http agent with one behaviour per path: `/sync` answers a result, `/ask` asks once then
 * answers, `/async` answers 202, `/async-then-sync` answers 202 to the first attempt and a result
 * to the next, `/flaky` a 503 with Retry-After first, `/broken` 500, `/weird` a 200 of another
 * shape, `/hang` never answers a task.run. Every `task.cancelled` gets 200.
 */
export const pushAgent: Answer = (request) => {
  const body = pushBodyOf(request);
  if (body.type === 'task.cancelled') return { status: 200 };
  const { data } = body;
  const done = (summary: string) =>
    json(200, { result: { summary, findings: [{ file: 'a.ts', line: 1, severity: 'low', message: 'nit' }] } });
  switch (request.path) {
    case '/sync':
      return done(`reviewed: ${data.message}`);
    case '/ask':
      if (data.messages.length === 1) return json(200, { input_request: { message: 'Which branch?' } });
      return done(`reviewed ${data.messages.at(-1)?.content}`);
    case '/async':
      return { status: 202 };
    case '/async-then-sync':
      return data.attempt === 1 ? { status: 202 } : done('second attempt');
    case '/flaky':
      return data.attempt === 1 ? { status: 503, headers: { 'retry-after': '1' } } : done('after a retry');
    case '/broken':
      return { status: 500 };
    case '/fails':
      return json(200, { error: { code: 'REPO_GONE', message: 'the repository is gone' } });
    case '/weird':
      return json(200, { answer: 42 });
    case '/hang':
      return null;
    default:
      return { status: 404 };
  }
};

/**
 * For a describe block: the production app on storage of its own (its dispatcher pushes every
 * http agent's tasks it finds there), a receiver on loopback answering as `pushAgent`, a user and
 * their signing secret.
 */
export function usePushApp(shared: TestDatabase) {
  let drop: () => Promise<void> = async () => undefined;
  const h = {
    t: undefined as unknown as TestApp,
    receiver: undefined as unknown as Receiver,
    user: undefined as unknown as TestUser,
    secret: '',

    /** An http agent of the user whose url is the receiver's `path`. */
    async httpAgent(path: string, extra: Record<string, unknown> = {}): Promise<string> {
      const url = h.receiver.url.replace('/hook', path);
      return (await createAgent(h.t, h.user, { runtime: { type: 'http', url, ...extra } })).uuid;
    },

    /** The task.run POSTs of a task once there are `count`. */
    runs(taskId: string, count: number): Promise<CapturedRequest[]> {
      return eventually(() => {
        const got = runsOf(h.receiver.requests, taskId);
        return got.length >= count ? got : undefined;
      }, `${count} task.run POSTs of ${taskId}`);
    },

    /** The task.cancelled POSTs of a task once there is one. */
    cancels(taskId: string): Promise<CapturedRequest[]> {
      return eventually(() => {
        const got = cancelsOf(h.receiver.requests, taskId);
        return got.length > 0 ? got : undefined;
      }, `task.cancelled of ${taskId}`);
    },
  };

  beforeAll(async () => {
    h.receiver = await startReceiver(pushAgent);
    const own = await ownDatabase(shared);
    drop = own.drop;
    h.t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 100 } });
    h.user = await createUser(h.t);
    h.secret = (await call(h.t.app, 'GET', '/auth/webhook_signing_secret', { token: h.user.token })).json().secret;
  });
  afterAll(async () => {
    await h.t?.close();
    await h.receiver?.close();
    await drop();
  });
  return h;
}
