import { randomInt, randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser, uniqueEmail } from '../../helpers/factories.js';
import { expectErrorEnvelope, expectFlatError, expectStandardHeaders } from '../../helpers/routes.js';
import { getTask, listTasks, workerHeaders } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, type Delivery, deliver, patchAs } from '../../helpers/triggers.js';

const MISSING = 'Webhook secret or signature is required';
const INVALID = 'Invalid webhook secret or signature';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const ID_HEADERS = ['x-github-delivery', 'webhook-id', 'idempotency-key'] as const;

const PR_EVENT = {
  action: 'opened',
  number: 42,
  draft: false,
  pull_request: { title: 'Fix "quotes" & ünïcode 🎉', labels: [{ name: 'bug' }, { name: 'p1' }], head: { sha: 'abc' } },
  repository: { full_name: 'octo/hello' },
  sender: { login: 'octocat', site_admin: null },
};

describe.each(DATABASES)('receiving webhooks on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  interface Setup {
    user: TestUser;
    agent: string;
    trigger: CreatedTrigger;
  }

  async function setup(template = 'Review {{payload.repository.full_name}}'): Promise<Setup> {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent, { message_template: template });
    return { user, agent, trigger };
  }

  const countTasks = async (s: Setup) => (await listTasks(t, s.user, s.agent)).pagination.total;
  const setEnabled = (s: Setup, enabled: boolean) =>
    patchAs(t, s.user, `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}`, { enabled });
  const setAgentStatus = (s: Setup, status: string) => patchAs(t, s.user, `/agent/${s.agent}`, { status });

  /** A trigger that every later check would refuse too: disabled, on a paused agent. */
  async function refusingEverything(): Promise<Setup> {
    const s = await setup();
    await setEnabled(s, false);
    await setAgentStatus(s, 'paused');
    return s;
  }

  const ok = (s: Setup, d: Delivery = {}) =>
    deliver(t, s.trigger.uuid, { body: PR_EVENT, secret: s.trigger.webhook_secret, ...d });

  describe('checks in the documented order', () => {
    it('1. an unknown trigger is 404 NOT_FOUND, whatever else is wrong', async () => {
      const s = await setup();
      const unknown = [randomUUID(), 'not-a-uuid', `${s.trigger.uuid}0`];
      for (const address of unknown) {
        for (const d of [{}, { contentType: 'text/plain', body: '{' }, { secret: s.trigger.webhook_secret }]) {
          expectErrorEnvelope(await deliver(t, address, d), 404, 'NOT_FOUND');
        }
      }
    });

    it(`2. no X-Webhook-Secret and no X-Hub-Signature-256 is 401 "${MISSING}"`, async () => {
      const s = await refusingEverything();
      for (const d of [{ contentType: 'text/plain', body: '{' }, { body: PR_EVENT }, { contentType: null }]) {
        expectFlatError(await deliver(t, s.trigger.uuid, d), 401, MISSING);
      }
      expect(await countTasks(s)).toBe(0);
    });

    it(`3. a wrong secret or signature is 401 "${INVALID}"`, async () => {
      const s = await refusingEverything();
      const body = '{"not json';
      const wrong: Delivery[] = [
        { secret: 'whs_wrong' },
        { secret: `${s.trigger.webhook_secret}x` },
        { secret: s.trigger.webhook_secret.slice(0, -1) },
        { signature: await sign('whs_wrong', body) },
        { signature: 'sha256=nope' },
      ];
      for (const d of wrong) {
        const res = await deliver(t, s.trigger.uuid, { body, contentType: 'text/plain', ...d });
        expectFlatError(res, 401, INVALID);
      }
      expect(await countTasks(s)).toBe(0);
    });

    it('4. a missing or non-JSON content type is 415 UNSUPPORTED_MEDIA_TYPE, after authentication', async () => {
      const s = await refusingEverything();
      const body = '{"not json';
      const types = [null, 'text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'text/json', 'json'];
      for (const contentType of types) {
        const res = await deliver(t, s.trigger.uuid, {
          body,
          contentType,
          signature: await sign(s.trigger.webhook_secret, body),
        });
        expect({ contentType, status: res.statusCode }).toEqual({ contentType, status: 415 });
        expectErrorEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
      expect(await countTasks(s)).toBe(0);
    });

    it('5. a body that does not parse, or a form without payload, is 400 INVALID_REQUEST', async () => {
      const s = await refusingEverything();
      const bad: Array<[string, string]> = [
        ['application/json', '{"a": '],
        ['application/json', ''],
        ['application/json', '{"a": 1} trailing'],
        ['application/vnd.foo+json', 'not json'],
        ['application/x-www-form-urlencoded', 'foo=bar'],
        ['application/x-www-form-urlencoded', ''],
        ['application/x-www-form-urlencoded', 'payload=%7B%22a%22'],
      ];
      for (const [contentType, body] of bad) {
        const res = await deliver(t, s.trigger.uuid, { body, contentType, secret: s.trigger.webhook_secret });
        expect({ contentType, body, status: res.statusCode }).toEqual({ contentType, body, status: 400 });
        expectErrorEnvelope(res, 400, 'INVALID_REQUEST');
      }
      // The signature is checked over the raw bytes, before any parsing.
      const broken = '{"a": ';
      const signed = await deliver(t, s.trigger.uuid, {
        body: broken,
        signature: await sign(s.trigger.webhook_secret, broken),
      });
      expectErrorEnvelope(signed, 400, 'INVALID_REQUEST');
      expect(await countTasks(s)).toBe(0);
    });

    it('5b. a payload nested deeper than 64 levels is 400 INVALID_REQUEST, and the refusal is logged', async () => {
      const s = await setup();
      const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
      const res = await deliver(t, s.trigger.uuid, { body: deep, secret: s.trigger.webhook_secret });
      expectErrorEnvelope(res, 400, 'INVALID_REQUEST');
      expect(res.json().error.message).toMatch(/deeper than 64/);
      const huge = `${'{"a":'.repeat(150_000)}1${'}'.repeat(150_000)}`;
      const hugeRes = await deliver(t, s.trigger.uuid, { body: huge, secret: s.trigger.webhook_secret });
      expectErrorEnvelope(hugeRes, 400, 'INVALID_REQUEST');
      // 64 levels exactly is fine, and brackets inside strings do not count.
      const fine = `${'['.repeat(64)}"[[[[{{{{"${']'.repeat(64)}`;
      const accepted = await deliver(t, s.trigger.uuid, { body: fine, secret: s.trigger.webhook_secret });
      expect(accepted.statusCode).toBe(202);
      const log = await call(t.app, 'GET', `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}/deliveries`, {
        token: s.user.token,
      });
      const statuses = log.json().deliveries.map((d: { status_code: number }) => d.status_code);
      expect(statuses).toContain(400);
      expect(statuses).toContain(202);
    });

    it('6. a disabled trigger is 403 TRIGGER_DISABLED and creates nothing', async () => {
      const s = await refusingEverything();
      expectErrorEnvelope(await ok(s), 403, 'TRIGGER_DISABLED');
      await setAgentStatus(s, 'active');
      expectErrorEnvelope(await ok(s, { headers: { 'x-github-delivery': randomUUID() } }), 403, 'TRIGGER_DISABLED');
      expect(await countTasks(s)).toBe(0);
      await setEnabled(s, true);
      expect((await ok(s)).statusCode).toBe(202);
    });

    it('7. an agent that is paused or stopped is 503 AGENT_UNAVAILABLE and creates nothing', async () => {
      const s = await setup();
      for (const status of ['paused', 'stopped']) {
        await setAgentStatus(s, status);
        expectErrorEnvelope(await ok(s), 503, 'AGENT_UNAVAILABLE');
      }
      expect(await countTasks(s)).toBe(0);
      await setAgentStatus(s, 'active');
      expect((await ok(s)).statusCode).toBe(202);
    });
  });

  it('202: the task carries the rendered template and {trigger_uuid, delivery_id, template_missing}', async () => {
    const template = [
      'PR #{{payload.number}} "{{ payload.pull_request.title }}" in {{payload.repository.full_name}}',
      'by {{payload.sender.login}} (admin: {{payload.sender.site_admin}}); draft={{payload.draft}}',
      'labels {{payload.pull_request.labels}}; first {{payload.pull_request.labels.0.name}}',
      '{{payload.missing.x}}|{{ payload.gone }}|{{payload.missing.x}}',
    ].join('\n');
    const s = await setup(template);
    const res = await ok(s);
    expect(res.statusCode, res.body).toBe(202);
    expectStandardHeaders(res);
    const accepted = res.json();
    expect(Object.keys(accepted).sort()).toEqual(['delivery_id', 'poll_url', 'status', 'task_id', 'trigger_uuid']);
    expect(accepted).toEqual({
      task_id: expect.stringMatching(UUID_RE),
      status: 'queued',
      trigger_uuid: s.trigger.uuid,
      delivery_id: expect.stringMatching(UUID_RE),
      poll_url: `${t.config.publicUrl}/agent/${s.agent}/task/${accepted.task_id}`,
    });

    const message = [
      'PR #42 "Fix "quotes" & ünïcode 🎉" in octo/hello',
      'by octocat (admin: ); draft=false',
      'labels [{"name":"bug"},{"name":"p1"}]; first bug',
      '||',
    ].join('\n');
    const task = await getTask(t, s.user, s.agent, accepted.task_id);
    expect(task).toMatchObject({
      task_id: accepted.task_id,
      status: 'queued',
      agent_uuid: s.agent,
      message,
      metadata: {
        trigger_uuid: s.trigger.uuid,
        delivery_id: accepted.delivery_id,
        template_missing: ['payload.sender.site_admin', 'payload.missing.x', 'payload.gone'],
      },
    });
    expect(Object.keys(task.metadata).sort()).toEqual(['delivery_id', 'template_missing', 'trigger_uuid']);
    expect(task.messages[0]).toMatchObject({ role: 'user', content: message });
    const polled = await call(t.app, 'GET', new URL(accepted.poll_url).pathname, { headers: workerHeaders(s.user) });
    expect(polled.json()).toEqual(task);
  });

  it('accepts application/*+json, parameters and any letter case of the JSON media types', async () => {
    const s = await setup('{{payload.repository.full_name}}');
    for (const contentType of [
      'application/vnd.foo+json',
      'application/cloudevents+json; charset=utf-8',
      'application/json; charset=utf-8',
      'Application/JSON',
    ]) {
      const res = await ok(s, { contentType });
      expect({ contentType, status: res.statusCode }).toEqual({ contentType, status: 202 });
      expect((await getTask(t, s.user, s.agent, res.json().task_id)).message).toBe('octo/hello');
    }
  });

  it("accepts GitHub's form encoding (payload=<urlencoded JSON>) signed over the raw form body", async () => {
    const s = await setup('{{payload.pull_request.title}} / {{payload.action}}');
    const json = JSON.stringify(PR_EVENT);
    const forms = [`payload=${encodeURIComponent(json)}`, new URLSearchParams({ payload: json }).toString()];
    for (const form of forms) {
      const res = await deliver(t, s.trigger.uuid, {
        body: form,
        contentType: 'application/x-www-form-urlencoded',
        signature: await sign(s.trigger.webhook_secret, form),
        headers: { 'x-github-delivery': randomUUID(), 'x-github-event': 'pull_request' },
      });
      expect(res.statusCode, res.body).toBe(202);
      expect((await getTask(t, s.user, s.agent, res.json().task_id)).message).toBe(
        'Fix "quotes" & ünïcode 🎉 / opened',
      );
    }
    // A signature over the JSON inside the form is not a signature over the body that was sent.
    const res = await deliver(t, s.trigger.uuid, {
      body: forms[0],
      contentType: 'application/x-www-form-urlencoded',
      signature: await sign(s.trigger.webhook_secret, json),
    });
    expectFlatError(res, 401, INVALID);
    expect(await countTasks(s)).toBe(2);
  });

  describe('deduplication', () => {
    it.each(ID_HEADERS)(
      '100 concurrent deliveries with one %s create one task and all answer the same',
      async (name) => {
        const s = await setup();
        const id = `delivery-${randomUUID()}`;
        const answers = await Promise.all(Array.from({ length: 100 }, () => ok(s, { headers: { [name]: id } })));
        for (const res of answers) expect(res.statusCode, res.body).toBe(202);
        const first = answers[0]?.json();
        expect(first.delivery_id).toBe(id);
        for (const res of answers) expect(res.json()).toEqual(first);
        const list = await listTasks(t, s.user, s.agent);
        expect(list.pagination.total).toBe(1);
        expect(list.tasks[0]?.task_id).toBe(first.task_id);
        // A later repeat, even with another body, answers the first 202 again.
        const again = await ok(s, { headers: { [name]: id }, body: { other: true } });
        expect(again.json()).toEqual(first);
        expect(await countTasks(s)).toBe(1);
      },
    );

    it('X-GitHub-Delivery wins over webhook-id, which wins over Idempotency-Key', async () => {
      const s = await setup();
      const [gh, wh, ik] = [`gh-${randomUUID()}`, `wh-${randomUUID()}`, `ik-${randomUUID()}`];
      const send = async (headers: Record<string, string>) => {
        const res = await ok(s, { headers });
        expect(res.statusCode, res.body).toBe(202);
        return res.json() as { task_id: string; delivery_id: string };
      };
      const all = await send({ 'x-github-delivery': gh, 'webhook-id': wh, 'idempotency-key': ik });
      expect(all.delivery_id).toBe(gh);
      expect(await send({ 'x-github-delivery': gh, 'webhook-id': randomUUID() })).toEqual(all);
      expect(await send({ 'x-github-delivery': gh, 'idempotency-key': randomUUID() })).toEqual(all);

      // The ids that did not count were not recorded.
      const byWebhookId = await send({ 'webhook-id': wh, 'idempotency-key': ik });
      expect(byWebhookId.delivery_id).toBe(wh);
      expect(byWebhookId.task_id).not.toBe(all.task_id);
      expect(await send({ 'webhook-id': wh, 'idempotency-key': randomUUID() })).toEqual(byWebhookId);

      const byKey = await send({ 'idempotency-key': ik });
      expect(byKey.delivery_id).toBe(ik);
      expect(new Set([all.task_id, byWebhookId.task_id, byKey.task_id]).size).toBe(3);
      expect(await send({ 'idempotency-key': ik })).toEqual(byKey);
      expect(await countTasks(s)).toBe(3);
    });

    it('ids are per trigger: the same id on two triggers creates two tasks', async () => {
      const s = await setup();
      const second = await createTrigger(t, s.user, s.agent);
      const id = randomUUID();
      const a = await ok(s, { headers: { 'x-github-delivery': id } });
      const b = await deliver(t, second.uuid, {
        body: PR_EVENT,
        secret: second.webhook_secret,
        headers: { 'x-github-delivery': id },
      });
      expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
      expect(a.json().delivery_id).toBe(id);
      expect(b.json().delivery_id).toBe(id);
      expect(b.json().task_id).not.toBe(a.json().task_id);
      expect(b.json().trigger_uuid).toBe(second.uuid);
      expect(await countTasks(s)).toBe(2);
    });

    it('without any id every delivery creates a task and gets a fresh delivery_id', async () => {
      const s = await setup();
      const answers = await Promise.all(Array.from({ length: 5 }, () => ok(s)));
      for (const res of answers) expect(res.statusCode).toBe(202);
      const bodies = answers.map((r) => r.json());
      for (const body of bodies) expect(body.delivery_id).toMatch(UUID_RE);
      expect(new Set(bodies.map((b) => b.delivery_id)).size).toBe(5);
      expect(new Set(bodies.map((b) => b.task_id)).size).toBe(5);
      expect(await countTasks(s)).toBe(5);
    });

    it('a refused delivery does not use up its id', async () => {
      const s = await setup();
      const id = randomUUID();
      await setAgentStatus(s, 'paused');
      expectErrorEnvelope(await ok(s, { headers: { 'webhook-id': id } }), 503, 'AGENT_UNAVAILABLE');
      expectFlatError(await ok(s, { headers: { 'webhook-id': id }, secret: 'whs_wrong' }), 401, INVALID);
      await setAgentStatus(s, 'active');
      const accepted = await ok(s, { headers: { 'webhook-id': id } });
      expect(accepted.statusCode).toBe(202);
      expect((await ok(s, { headers: { 'webhook-id': id } })).json()).toEqual(accepted.json());
      expect(await countTasks(s)).toBe(1);
    });

    it('a delivery id over 255 characters is 400, but only once the sender is authenticated', async () => {
      const s = await setup();
      const long = { 'x-github-delivery': 'd'.repeat(256) };
      expectFlatError(await deliver(t, s.trigger.uuid, { body: PR_EVENT, headers: long }), 401, MISSING);
      expectFlatError(await ok(s, { headers: long, secret: 'whs_wrong' }), 401, INVALID);
      expectErrorEnvelope(await ok(s, { headers: long }), 400, 'INVALID_REQUEST');
      expect(await countTasks(s)).toBe(0);
      const longest = await ok(s, { headers: { 'x-github-delivery': 'd'.repeat(255) } });
      expect(longest.statusCode).toBe(202);
    });
  });

  it('logs every request that named the trigger, refused ones included, newest first', async () => {
    const s = await setup();
    const gh = `gh-${randomUUID()}`;
    const sent: Array<() => Promise<LightMyRequestResponse>> = [
      () => deliver(t, s.trigger.uuid, { body: PR_EVENT, headers: { 'x-github-delivery': 'refused-1' } }),
      () => ok(s, { secret: 'whs_wrong' }),
      () => ok(s, { contentType: 'text/plain' }),
      () => ok(s, { body: '{"broken": ' }),
      () => ok(s, { headers: { 'x-github-delivery': gh } }),
      () => ok(s, { headers: { 'x-github-delivery': gh } }),
      () => ok(s),
      async () => {
        await setEnabled(s, false);
        return ok(s);
      },
      async () => {
        await setEnabled(s, true);
        await setAgentStatus(s, 'paused');
        return ok(s);
      },
    ];
    const answers: LightMyRequestResponse[] = [];
    for (const send of sent) answers.push(await send());
    expect(answers.map((r) => r.statusCode)).toEqual([401, 401, 415, 400, 202, 202, 202, 403, 503]);
    // Requests to an unknown address are logged nowhere.
    expectErrorEnvelope(await deliver(t, randomUUID(), { secret: s.trigger.webhook_secret }), 404, 'NOT_FOUND');

    const url = `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}/deliveries`;
    const res = await call(t.app, 'GET', url, { headers: workerHeaders(s.user) });
    expect(res.statusCode, res.body).toBe(200);
    const { deliveries, pagination } = res.json();
    expect(pagination).toEqual({ page: 1, limit: 20, total: 9, total_pages: 1 });
    const newestFirst = [...answers].reverse();
    expect(deliveries.map((d: { status_code: number }) => d.status_code)).toEqual(newestFirst.map((r) => r.statusCode));
    for (const [i, d] of deliveries.entries()) {
      const answer = newestFirst[i] as LightMyRequestResponse;
      expect(Object.keys(d).sort()).toEqual(['delivery_id', 'error', 'received_at', 'status_code', 'task_id']);
      expect(d.received_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      if (answer.statusCode === 202) {
        expect(d).toMatchObject({
          error: null,
          task_id: answer.json().task_id,
          delivery_id: answer.json().delivery_id,
        });
      } else {
        expect(d.task_id).toBeNull();
        expect(typeof d.error).toBe('string');
        expect(d.error.length).toBeGreaterThan(0);
      }
    }
    expect(deliveries.at(-1)).toMatchObject({ delivery_id: 'refused-1', error: MISSING, status_code: 401 });
    expect(deliveries.at(-2)).toMatchObject({ error: INVALID, status_code: 401 });
    expect(deliveries.at(-2).delivery_id).toMatch(UUID_RE);
    expect(deliveries.slice(3, 5).map((d: { delivery_id: string }) => d.delivery_id)).toEqual([gh, gh]);
    for (let i = 1; i < deliveries.length; i++) {
      expect(deliveries[i - 1].received_at >= deliveries[i].received_at).toBe(true);
    }

    const paged = await call(t.app, 'GET', `${url}?limit=4&page=3`, { headers: workerHeaders(s.user) });
    expect(paged.json()).toEqual({
      deliveries: [deliveries[8]],
      pagination: { page: 3, limit: 4, total: 9, total_pages: 3 },
    });
    for (const query of ['page=0', 'limit=0', 'limit=101', 'limit=abc']) {
      const bad = await call(t.app, 'GET', `${url}?${query}`, { headers: workerHeaders(s.user) });
      expectErrorEnvelope(bad, 400, 'INVALID_REQUEST', query.split('=')[0]);
    }
  });
});

/** A documentation-range IPv6 address no other test uses. */
function uniqueAddress(): string {
  const part = () => randomInt(0x10000).toString(16);
  return `2001:db8:${part()}:${part()}::${part()}`;
}

describe.each(DATABASES)('webhook rate limit on $name', (database) => {
  const LIMIT = 5;
  // One window ahead of real time (and a fresh window per step), like test/http/rate-limit.test.ts,
  // so other files' traffic never shares these counts; the sweeper stays idle meanwhile.
  const clock = manualClock(Math.floor(Date.now() / MINUTE) * MINUTE + MINUTE);
  const nextWindow = () => {
    clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE);
    return clock.now();
  };
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { rateLimit: LIMIT, sweepIntervalMs: DAY } });
  });
  afterAll(() => t.close());

  /** A user (logged in from an address of its own), an agent and two triggers: 3 requests in the user's scope. */
  async function setup() {
    const email = uniqueEmail();
    const password = `pw-${randomUUID()}`;
    await t.accounts.createUser({ email, password, verified: true, agentsEnabled: true });
    const login = await t.app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email, password },
      remoteAddress: uniqueAddress(),
    });
    const token = login.json().token as string;
    const agent = await call(t.app, 'POST', '/agent', { token, body: { name: 'rate-limited' } });
    const trigger = async () => {
      const res = await call(t.app, 'POST', `/v1/agent/${agent.json().uuid}/triggers`, {
        token,
        body: { name: 't', message_template: '{{payload.n}}' },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json() as CreatedTrigger;
    };
    return { token, agent: agent.json().uuid as string, first: await trigger(), second: await trigger() };
  }

  const limits = (res: LightMyRequestResponse) => ({
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    reset: Number(res.headers['x-ratelimit-reset']),
  });

  it("counts per trigger and in the owner's window: the 6th delivery is 429 with Retry-After, on any trigger", async () => {
    const { token, agent, first, second } = await setup();
    const start = nextWindow();
    const reset = start / 1000 + 60;
    const fire = (trigger: CreatedTrigger, d: Delivery = {}) =>
      deliver(t, trigger.uuid, {
        body: { n: 1 },
        secret: trigger.webhook_secret,
        remoteAddress: uniqueAddress(),
        ...d,
      });

    for (let i = 0; i < LIMIT; i++) {
      const res = await fire(first);
      expect(res.statusCode, res.body).toBe(202);
      expect(limits(res)).toEqual({ limit: LIMIT, remaining: LIMIT - 1 - i, reset });
    }
    clock.advance(20_000);
    const over = await fire(first);
    expect(over.statusCode).toBe(429);
    expect(over.headers['retry-after']).toBe('40');
    expect(limits(over)).toEqual({ limit: LIMIT, remaining: 0, reset });
    expectErrorEnvelope(over, 429, 'RATE_LIMITED');
    // A request without the right secret counts against its own address, not the trigger: it is
    // answered 401 (its address still has room) although the trigger's window is used up.
    const stranger = await fire(first, { secret: 'whs_wrong' });
    expect(stranger.statusCode).toBe(401);
    expect(limits(stranger)).toEqual({ limit: LIMIT, remaining: LIMIT - 1, reset });

    // The owner's window is used up too: another trigger of theirs, and their own API, wait.
    const other = await fire(second);
    expect(other.statusCode).toBe(429);
    expect(other.headers['retry-after']).toBe('40');
    expect((await call(t.app, 'GET', `/agent/${agent}/tasks`, { token })).statusCode).toBe(429);

    nextWindow();
    expect((await fire(second)).statusCode).toBe(202);
    const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { token });
    expect(list.json().pagination.total).toBe(LIMIT + 1);
  });

  it("shares the owner's window between their own submits and their triggers' deliveries", async () => {
    const { token, agent, first, second } = await setup();
    const start = nextWindow();
    const reset = start / 1000 + 60;
    const fire = (trigger: CreatedTrigger) =>
      deliver(t, trigger.uuid, { body: { n: 1 }, secret: trigger.webhook_secret, remoteAddress: uniqueAddress() });
    const submit = () => call(t.app, 'POST', `/agent/request/${agent}`, { token, body: { message: 'by hand' } });

    expect((await submit()).statusCode).toBe(202);
    expect((await submit()).statusCode).toBe(202);
    const firstDelivery = await fire(first);
    expect(firstDelivery.statusCode, firstDelivery.body).toBe(202);
    // The owner's window has 3 used, the trigger's 1: a delivery shows its trigger's window.
    expect(limits(firstDelivery)).toEqual({ limit: LIMIT, remaining: LIMIT - 1, reset });
    expect((await fire(second)).statusCode).toBe(202);
    expect((await fire(first)).statusCode).toBe(202);
    // Five tasks in the owner's window: neither a trigger (each has room in its own window) nor
    // the owner gets a sixth.
    expect((await fire(second)).statusCode).toBe(429);
    expect((await fire(first)).statusCode).toBe(429);
    expect((await submit()).statusCode).toBe(429);

    nextWindow();
    const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { token });
    expect(list.json().pagination.total).toBe(LIMIT);
  });

  it("shows the trigger's window on a delivery, and the owner's only on a 429 the owner's window caused", async () => {
    const { token, agent, first } = await setup();
    const start = nextWindow();
    const reset = start / 1000 + 60;
    const address = uniqueAddress();
    const fire = (secret: string) => deliver(t, first.uuid, { body: { n: 1 }, secret, remoteAddress: address });
    const own = () => call(t.app, 'GET', `/agent/${agent}/tasks`, { token });
    // Wrong-secret twins count against the address only; the owner spends 2 of their window.
    for (let i = 0; i < 2; i++) expect((await fire('whs_wrong')).statusCode).toBe(401);
    for (let i = 0; i < 2; i++) expect((await own()).statusCode).toBe(200);
    const good = await fire(first.webhook_secret);
    expect(good.statusCode, good.body).toBe(202);
    // The trigger's window: its first delivery of the window, whatever the owner did.
    expect(limits(good)).toEqual({ limit: LIMIT, remaining: LIMIT - 1, reset });
    // The owner fills their window (5 of 5): the next delivery is refused by it, and says so.
    for (let i = 0; i < 2; i++) expect((await own()).statusCode).toBe(200);
    clock.advance(15_000);
    const over = await fire(first.webhook_secret);
    expect(over.statusCode).toBe(429);
    expect(limits(over)).toEqual({ limit: LIMIT, remaining: 0, reset });
    expect(over.headers['retry-after']).toBe('45');
  });

  it("does not let strangers without the secret use up the owner's window", async () => {
    const { token, agent, first } = await setup();
    nextWindow();
    const address = uniqueAddress();
    for (let i = 0; i < LIMIT * 2; i++) {
      const res = await deliver(t, first.uuid, { body: { n: 1 }, secret: 'whs_wrong', remoteAddress: address });
      expect([401, 429]).toContain(res.statusCode);
    }
    const own = await call(t.app, 'GET', `/agent/${agent}/tasks`, { token });
    expect(own.statusCode).toBe(200);
    expect(limits(own).remaining).toBe(LIMIT - 1);
    const real = await deliver(t, first.uuid, { body: { n: 1 }, secret: first.webhook_secret, remoteAddress: address });
    expect(real.statusCode, real.body).toBe(202);
  });

  it('puts X-RateLimit-* on every webhook response; unknown addresses count against the client address', async () => {
    const { first } = await setup();
    const start = nextWindow();
    const reset = start / 1000 + 60;
    const address = uniqueAddress();
    const answers = [
      await deliver(t, first.uuid, { body: {}, remoteAddress: address }),
      await deliver(t, first.uuid, { body: {}, secret: 'whs_wrong', remoteAddress: address }),
      await deliver(t, first.uuid, { body: 'x', contentType: 'text/plain', secret: first.webhook_secret }),
      await deliver(t, first.uuid, { body: '{', secret: first.webhook_secret }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([401, 401, 415, 400]);
    for (const res of answers) expectStandardHeaders(res);
    // The two without a valid secret count against the client address, the two with one against the trigger.
    expect(answers.map((r) => limits(r).remaining)).toEqual([4, 3, 4, 3]);

    const unknown = await deliver(t, randomUUID(), { body: {}, remoteAddress: address });
    expectErrorEnvelope(unknown, 404, 'NOT_FOUND');
    expect(limits(unknown)).toEqual({ limit: LIMIT, remaining: LIMIT - 3, reset });
  });
});

describe.each(DATABASES)('delivery ids over time on $name', (database) => {
  // Starts a day in the past, so the jump ends near real time (see triggers-routes.test.ts).
  const clock = manualClock(Date.now() - DAY - MINUTE);
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { sweepIntervalMs: DAY } });
  });
  afterAll(() => t.close());

  it('an id deduplicates for 24 hours, then the same delivery creates a new task', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent);
    const id = randomUUID();
    const send = () =>
      deliver(t, trigger.uuid, { body: PR_EVENT, secret: trigger.webhook_secret, headers: { 'webhook-id': id } });
    const start = clock.now();
    const first = await send();
    expect(first.statusCode).toBe(202);
    clock.set(start + DAY - 1000);
    expect((await send()).json()).toEqual(first.json());
    clock.set(start + DAY + 1000);
    const fresh = await send();
    expect(fresh.statusCode).toBe(202);
    expect(fresh.json().task_id).not.toBe(first.json().task_id);
    expect(fresh.json().delivery_id).toBe(id);
    expect((await send()).json()).toEqual(fresh.json());
    expect((await listTasks(t, user, agent)).pagination.total).toBe(2);
  });
});
