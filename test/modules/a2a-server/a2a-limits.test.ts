import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { AcquireConnection } from '../../../src/http/connection-limits.js';
import { handleError } from '../../../src/http/error-handler.js';
import { ErrorEnvelopeSchema, FlatErrorSchema } from '../../../src/http/error-schemas.js';
import { AppError } from '../../../src/http/errors.js';
import { registerValidators } from '../../../src/http/validation.js';
import { a2aServerRoutes } from '../../../src/modules/a2a-server/a2a-server-routes.js';
import type { A2aServerService } from '../../../src/modules/a2a-server/a2a-server-service.js';
import type { TaskRecord } from '../../../src/modules/tasks/tasks-record.js';

const USER = randomUUID();
const AGENT = randomUUID();
const TASK = randomUUID();
const AT = '2026-11-22T10:00:00.000Z';

/** A finished task: a stream of it sends the task and ends. */
const finished = {
  uuid: TASK,
  agentUuid: AGENT,
  workspaceUuid: USER,
  status: 'completed',
  priority: 5,
  message: 'm',
  messages: [{ role: 'user', content: 'm', created_at: AT }],
  metadata: {},
  createdAt: AT,
  completedAt: AT,
  result: { summary: 's', findings: [] },
  seq: 2,
} as unknown as TaskRecord;

/**
 * The routes over a two-line service fake: these tests are about how the endpoint takes and gives
 * back slots of the user's caps on waits and streams (the app passes its connection limits).
 */
async function appWith(acquire: AcquireConnection, sent: string[]): Promise<FastifyInstance> {
  const service = {
    agent: async () => ({ uuid: AGENT, status: 'active' }),
    send: async () => {
      sent.push('send');
      return finished;
    },
    settle: async () => finished,
    a2aTask: async () => ({ id: TASK }),
    a2aView: async () => ({ id: TASK, contextId: TASK, status: { state: 'TASK_STATE_COMPLETED' } }),
  } as unknown as A2aServerService;
  const app = Fastify();
  registerValidators(app);
  app.addSchema(ErrorEnvelopeSchema);
  app.addSchema(FlatErrorSchema);
  app.setErrorHandler(handleError);
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    request.principal = {
      userUuid: USER,
      workspaceUuid: USER,
      role: 'owner',
      keyName: null,
      email: 'u@x',
      via: 'jwt',
      credentialUuid: null,
      agentsEnabled: true,
      tokenVersion: 0,
    };
  });
  const tasks = { snapshot: async () => ({ seq: 2, view: {} }), eventsAfter: async () => [] };
  const notifier = { subscribe: () => () => undefined, fallbackPollMs: 1000 };
  const credentials = { stillValid: async () => true, onChange: () => () => undefined };
  const timers = { every: () => () => undefined };
  await app.register(
    a2aServerRoutes({ service, push: {} as never, stream: { tasks, notifier, credentials, timers } as never, acquire }),
  );
  return app;
}

function post(app: FastifyInstance, method: string, params: unknown) {
  return app.inject({
    method: 'POST',
    url: `/a2a/${AGENT}`,
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };

describe('A2A waits and streams against the user caps', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
  });

  it('holds a wait slot for a blocking send and gives it back; returnImmediately takes none', async () => {
    const log: string[] = [];
    const sent: string[] = [];
    app = await appWith((user, kind) => {
      log.push(`acquire ${kind} ${user === USER}`);
      return () => log.push(`release ${kind}`);
    }, sent);
    expect((await post(app, 'SendMessage', { message })).json().result).toEqual({ task: { id: TASK } });
    expect(log).toEqual(['acquire wait true', 'release wait']);
    await post(app, 'SendMessage', { message, configuration: { returnImmediately: true } });
    expect(log).toHaveLength(2);

    const stream = await post(app, 'SendStreamingMessage', { message });
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.body).toContain('"TASK_STATE_COMPLETED"');
    expect(log.slice(2)).toEqual(['acquire stream true', 'release stream']);
    expect(sent).toHaveLength(3);
  });

  it('answers 429 LIMIT_EXCEEDED when the user has no slot left, before anything is sent', async () => {
    const sent: string[] = [];
    app = await appWith((_user, kind) => {
      throw new AppError('LIMIT_EXCEEDED', `Too many open ${kind}s`, undefined, 429);
    }, sent);
    for (const method of ['SendMessage', 'SendStreamingMessage']) {
      const res = await post(app, method, { message });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'LIMIT_EXCEEDED' } });
    }
    expect(sent).toEqual([]);
  });
});
