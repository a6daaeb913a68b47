import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { type SseEvent, sseReader } from '../../helpers/streams.js';
import {
  cancelTask,
  claimOne,
  reportComplete,
  reportInputRequest,
  reportProgress,
  sendMessage,
  submitTask,
  within,
} from '../../helpers/tasks.js';

describe.each(DATABASES)('task events (SSE) on $name', (database) => {
  let t: TestApp;
  let base: string;
  const controllers: AbortController[] = [];

  beforeAll(async () => {
    t = await buildTestApp(database);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const c of controllers) c.abort();
    await t.close();
  });

  async function open(user: TestUser, agent: string, taskId: string, lastEventId?: number) {
    const controller = new AbortController();
    controllers.push(controller);
    const headers: Record<string, string> = { 'x-api-key': user.key, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    const res = await fetch(`${base}/agent/${agent}/task/${taskId}/events`, { headers, signal: controller.signal });
    return { res, controller };
  }

  async function stream(user: TestUser, agent: string, taskId: string, lastEventId?: number) {
    const { res, controller } = await open(user, agent, taskId, lastEventId);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    if (!res.body) throw new Error('no body');
    return { events: sseReader(res.body), close: () => controller.abort() };
  }

  async function setup() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent, { message: 'stream me' });
    return { user, agent, taskId: task_id };
  }

  /** Ids are integers that only go up (after `after`, when given): nothing is sent twice. */
  function expectIncreasing(events: SseEvent[], after = 0) {
    const ids = events.map((e) => e.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    for (const [i, id] of ids.entries()) expect(id).toBeGreaterThan(i === 0 ? after : (ids[i - 1] as number));
  }

  it('streams every transition in order with increasing ids and ends after the final state', async () => {
    const { user, agent, taskId } = await setup();
    const { events } = await stream(user, agent, taskId);
    const seen: SseEvent[] = [];
    const take = async () => {
      const event = await events.next();
      if (!event) throw new Error('stream ended early');
      seen.push(event);
      return event;
    };

    expect((await take()).data).toMatchObject({ task_id: taskId, status: 'queued' });
    const first = await claimOne(t, user, agent);
    expect((await take()).data.status).toBe('running');
    await reportProgress(t, user, agent, taskId, { lease_id: first.lease_id, ...progressOf(1) });
    expect((await take()).data).toMatchObject({ status: 'running', progress: progressOf(1) });
    await reportInputRequest(t, user, agent, taskId, first.lease_id, 'which branch?');
    expect((await take()).data).toMatchObject({
      status: 'awaiting_input',
      input_request: { message: 'which branch?' },
    });
    await sendMessage(t, user, agent, taskId, 'main');
    expect((await take()).data).toMatchObject({ status: 'running' });
    const second = await claimOne(t, user, agent);
    await reportComplete(t, user, agent, taskId, second.lease_id, { summary: 'done' });
    const rest = await events.rest();
    seen.push(...rest);

    expect(rest.at(-1)?.data).toMatchObject({ status: 'completed', result: { summary: 'done' } });
    expect(seen.every((e) => e.event === 'task' && e.data.task_id === taskId)).toBe(true);
    expectIncreasing(seen);
    const statuses = seen.map((e) => e.data.status).filter((s, i, all) => s !== all[i - 1]);
    expect(statuses).toEqual(['queued', 'running', 'awaiting_input', 'running', 'completed']);
    expect(seen.map((e) => e.data.messages.length)).toEqual([1, 1, 1, 2, 3, ...rest.map(() => 3)]);
  });

  it('a reconnect with Last-Event-ID gets exactly the events after that id, then live ones', async () => {
    const { user, agent, taskId } = await setup();
    const a = await stream(user, agent, taskId);
    const queued = await a.events.next();
    const claim = await claimOne(t, user, agent);
    const running = await a.events.next();
    if (!queued || !running) throw new Error('missing events');
    a.close();

    // While nobody listens.
    await reportProgress(t, user, agent, taskId, { lease_id: claim.lease_id, ...progressOf(1) });
    await reportProgress(t, user, agent, taskId, { lease_id: claim.lease_id, ...progressOf(2) });

    const b = await stream(user, agent, taskId, running.id);
    const missed = [await b.events.next(), await b.events.next()];
    expect(missed.map((e) => e?.data.progress)).toEqual([progressOf(1), progressOf(2)]);
    await reportProgress(t, user, agent, taskId, { lease_id: claim.lease_id, ...progressOf(3) });
    await reportComplete(t, user, agent, taskId, claim.lease_id);
    const live = await b.events.rest();
    const resumed = [...(missed as SseEvent[]), ...live];
    expectIncreasing(resumed, running.id);
    expect(resumed.map((e) => e.data.status)).toEqual(['running', 'running', 'running', 'completed']);
    expect(resumed[2]?.data.progress).toEqual(progressOf(3));

    // A later replay from the first id is the same history.
    const c = await stream(user, agent, taskId, queued.id);
    const replay = await c.events.rest();
    expect(replay).toEqual([running, ...resumed]);
  });

  it('a reconnect after the final event ends at once without repeating anything', async () => {
    const { user, agent, taskId } = await setup();
    expect((await cancelTask(t, user, agent, taskId)).statusCode).toBe(200);
    const whole = await (await stream(user, agent, taskId)).events.rest();
    expect(whole.map((e) => e.data.status)).toEqual(['cancelled']);
    const last = whole.at(-1)?.id as number;
    const again = await stream(user, agent, taskId, last);
    expect(await again.events.rest(5000)).toEqual([]);
  });

  it('a Last-Event-ID past the newest event resumes from the newest', async () => {
    const { user, agent, taskId } = await setup();
    // The headers arrive at once although there is nothing to send yet (no waiting for a keep-alive),
    // and once they are out the server has read the task, so the cancel below comes after.
    const ahead = await within(stream(user, agent, taskId, 999_999), 5000, 'response headers');
    expect((await cancelTask(t, user, agent, taskId)).statusCode).toBe(200);
    const events = await ahead.events.rest();
    expect(events.map((e) => e.data.status)).toEqual(['cancelled']);
  });

  it('a stream on a finished task sends the current task and ends; cancellation ends a live stream', async () => {
    const { user, agent, taskId } = await setup();
    const live = await stream(user, agent, taskId);
    expect((await live.events.next())?.data.status).toBe('queued');
    expect((await cancelTask(t, user, agent, taskId)).statusCode).toBe(200);
    const rest = await live.events.rest();
    expect(rest.map((e) => e.data.status)).toEqual(['cancelled']);
    expect(rest[0]?.data.cancelled_at).toEqual(expect.any(String));

    const later = await (await stream(user, agent, taskId)).events.rest();
    expect(later).toEqual(rest);
  });

  it("is 404 for someone else's task, another agent's task or an unknown task", async () => {
    const { user, agent, taskId } = await setup();
    const stranger = await createUser(t);
    const strangerAgent = (await createAgent(t, stranger)).uuid;
    const sibling = (await createAgent(t, user)).uuid;
    const cases: Array<[TestUser, string, string]> = [
      [stranger, agent, taskId],
      [stranger, strangerAgent, taskId],
      [user, sibling, taskId],
      [user, agent, '0190b7a2-0000-7000-8000-000000000000'],
    ];
    for (const [who, agentId, id] of cases) {
      const { res } = await open(who, agentId, id);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    }
    const anonymous = await fetch(`${base}/agent/${agent}/task/${taskId}/events`);
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
  });

  it('refuses a malformed Last-Event-ID', async () => {
    const { user, agent, taskId } = await setup();
    const res = await fetch(`${base}/agent/${agent}/task/${taskId}/events`, {
      headers: { 'x-api-key': user.key, 'last-event-id': 'abc' },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_REQUEST');
  });
});

function progressOf(step: number) {
  return { current_step: `step ${step}`, steps_completed: step, total_steps: 3 };
}
