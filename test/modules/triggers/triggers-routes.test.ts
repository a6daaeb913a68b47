import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { expectErrorEnvelope, expectFlatError } from '../../helpers/routes.js';
import { getTask, listTasks, workerHeaders } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, deliver, patchAs } from '../../helpers/triggers.js';

const PUBLIC_URL = 'https://hooks.example.test';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 24 * 60 * 60 * 1000;
const VIEW_KEYS = [
  'agent_uuid',
  'concurrency_key',
  'created_at',
  'enabled',
  'message_template',
  'name',
  'updated_at',
  'uuid',
  'verification',
  'webhook_url',
];

/** `whs_` + URL-safe base64 of at least 32 random bytes (docs/api.md §7.1). */
function expectWebhookSecret(secret: unknown) {
  expect(secret).toMatch(/^whs_[A-Za-z0-9_-]+$/);
  const bytes = Buffer.from(String(secret).slice(4), 'base64url');
  expect(bytes.length).toBeGreaterThanOrEqual(32);
  expect(`whs_${bytes.toString('base64url')}`).toBe(secret);
}

describe.each(DATABASES)('trigger management on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { publicUrl: PUBLIC_URL } });
  });
  afterAll(() => t.close());

  const base = (agent: string) => `/v1/agent/${agent}/triggers`;
  const api = (user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    call(t.app, method, url, { headers: workerHeaders(user), body });

  async function setup() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    return { user, agent };
  }

  /** Every response about a trigger after its creation: none may carry the secret. */
  function expectNoSecret(res: LightMyRequestResponse, secret: string) {
    expect(res.body).not.toContain('webhook_secret');
    expect(res.body).not.toContain(secret);
    expect(res.body).not.toContain(secret.slice(4));
  }

  it('create answers 201 with the trigger, its webhook_url and a whs_ secret that is never shown again', async () => {
    const { user, agent } = await setup();
    const res = await api(user, 'POST', base(agent), {
      name: 'GitHub pushes',
      message_template: 'Push {{payload.ref}}',
    });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json() as CreatedTrigger;
    expect(Object.keys(created).sort()).toEqual([...VIEW_KEYS, 'webhook_secret'].sort());
    expect(created).toMatchObject({
      agent_uuid: agent,
      name: 'GitHub pushes',
      message_template: 'Push {{payload.ref}}',
      enabled: true,
      webhook_url: `${PUBLIC_URL}/v1/webhooks/triggers/${created.uuid}`,
    });
    expect(created.uuid).toMatch(UUID_RE);
    expect(created.created_at).toMatch(TIMESTAMP_RE);
    expect(created.updated_at).toBe(created.created_at);
    expectWebhookSecret(created.webhook_secret);

    const secret = created.webhook_secret;
    const { webhook_secret: _, ...view } = created;
    const url = `${base(agent)}/${created.uuid}`;
    const reads = [
      await api(user, 'GET', base(agent)),
      await api(user, 'GET', url),
      await api(user, 'PATCH', url, { name: 'renamed' }),
      await api(user, 'GET', `${url}/deliveries`),
    ];
    for (const read of reads) {
      expect(read.statusCode, read.body).toBe(200);
      expectNoSecret(read, secret);
    }
    expect(reads[1]?.json()).toEqual(view);
    expect(reads[0]?.json().triggers).toEqual([view]);
    expect(reads[2]?.json()).toEqual({ ...view, name: 'renamed', updated_at: expect.any(String) });
    // The secret shown once is the one that opens the address.
    expect((await deliver(t, created.uuid, { body: { ref: 'main' }, secret })).statusCode).toBe(202);
  });

  it('makes a different secret for every trigger', async () => {
    const { user, agent } = await setup();
    const secrets = await Promise.all(Array.from({ length: 20 }, () => createTrigger(t, user, agent)));
    const values = secrets.map((s) => s.webhook_secret);
    for (const secret of values) expectWebhookSecret(secret);
    expect(new Set(values).size).toBe(values.length);
  });

  it('enabled defaults to true; false is kept', async () => {
    const { user, agent } = await setup();
    expect((await createTrigger(t, user, agent)).enabled).toBe(true);
    expect((await createTrigger(t, user, agent, { enabled: true })).enabled).toBe(true);
    const off = await createTrigger(t, user, agent, { enabled: false });
    expect(off.enabled).toBe(false);
    expect((await api(user, 'GET', `${base(agent)}/${off.uuid}`)).json().enabled).toBe(false);
  });

  it('refuses missing fields, a name over 255 characters and invalid templates with 400, creating nothing', async () => {
    const { user, agent } = await setup();
    const refused: Array<[unknown, string]> = [
      [{}, 'name'],
      [{ name: 'n' }, 'message_template'],
      [{ message_template: 'm' }, 'name'],
      [{ name: 'x'.repeat(256), message_template: 'm' }, 'name'],
      [{ name: '', message_template: 'm' }, 'name'],
      [{ name: 'n', message_template: '' }, 'message_template'],
      [{ name: 'n', message_template: 'x'.repeat(10_001) }, 'message_template'],
      [{ name: 'n', message_template: 'm', enabled: 'yes' }, 'enabled'],
    ];
    for (const [body, field] of refused) {
      const res = await api(user, 'POST', base(agent), body);
      expectErrorEnvelope(res, 400, 'INVALID_REQUEST', field);
    }
    const templates: Array<[string, number]> = [
      ['{{ foo }}', 0],
      ['Hello {{payload.}}', 6],
      ['{{payload..a}}', 0],
      ['ok {{payload.a}} and {{payload.a', 21],
      ['{{}}', 0],
    ];
    for (const [template, position] of templates) {
      const res = await api(user, 'POST', base(agent), { name: 'n', message_template: template });
      const body = expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'message_template');
      expect({ template, reason: (body.error as { details: { reason: string } }).details.reason }).toEqual({
        template,
        reason: expect.stringContaining(`at character ${position}`),
      });
    }
    expect((await api(user, 'GET', base(agent))).json().pagination.total).toBe(0);

    const longest = await api(user, 'POST', base(agent), {
      name: 'n'.repeat(255),
      message_template: 'm'.repeat(10_000),
    });
    expect(longest.statusCode, longest.body).toBe(201);
  });

  it('lists newest first, page by page, with correct pagination past the end', async () => {
    const { user, agent } = await setup();
    const other = (await createAgent(t, user)).uuid;
    await createTrigger(t, user, other, { name: 'on another agent' });
    for (let i = 0; i < 5; i++) await createTrigger(t, user, agent, { name: `t${i}` });
    const page = async (query: string) => {
      const res = await api(user, 'GET', `${base(agent)}${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { triggers: Array<{ name: string }>; pagination: unknown };
    };
    const all = await page('');
    expect(all.triggers.map((x) => x.name)).toEqual(['t4', 't3', 't2', 't1', 't0']);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 5, total_pages: 1 });
    for (const trigger of all.triggers) expect(Object.keys(trigger).sort()).toEqual(VIEW_KEYS);

    const pages = [await page('?limit=2'), await page('?limit=2&page=2'), await page('?page=3&limit=2')];
    expect(pages.map((p) => p.triggers.map((x) => x.name))).toEqual([['t4', 't3'], ['t2', 't1'], ['t0']]);
    expect(pages.map((p) => p.pagination)).toEqual(
      [1, 2, 3].map((n) => ({ page: n, limit: 2, total: 5, total_pages: 3 })),
    );
    expect(await page('?page=4&limit=2')).toEqual({
      triggers: [],
      pagination: { page: 4, limit: 2, total: 5, total_pages: 3 },
    });
    expect((await page('?page=1&limit=1')).triggers.map((x) => x.name)).toEqual(['t4']);
    expect((await page('?limit=100')).pagination).toEqual({ page: 1, limit: 100, total: 5, total_pages: 1 });

    const empty = (await createAgent(t, user)).uuid;
    const none = await api(user, 'GET', base(empty));
    expect(none.json()).toEqual({ triggers: [], pagination: { page: 1, limit: 20, total: 0, total_pages: 0 } });
  });

  it.each(['page=0', 'page=-1', 'page=abc', 'page=1.5', 'limit=0', 'limit=101', 'limit=abc', 'limit=-5', 'limit=2.5'])(
    'list refuses %s with 400 INVALID_REQUEST',
    async (query) => {
      const { user, agent } = await setup();
      const res = await api(user, 'GET', `${base(agent)}?${query}`);
      expectErrorEnvelope(res, 400, 'INVALID_REQUEST', query.split('=')[0]);
    },
  );

  it('get, patch (each field) and delete; afterwards the webhook address is 404', async () => {
    const { user, agent } = await setup();
    const created = await createTrigger(t, user, agent, { name: 'before', message_template: 'Old {{payload.x}}' });
    const { webhook_secret: secret, ...view } = created;
    const url = `${base(agent)}/${created.uuid}`;
    expect((await api(user, 'GET', url)).json()).toEqual(view);

    const renamed = await patchAs(t, user, url, { name: 'after' });
    expect(renamed).toEqual({ ...view, name: 'after', updated_at: expect.stringMatching(TIMESTAMP_RE) });
    expect(renamed.updated_at >= view.updated_at).toBe(true);
    const retemplated = await patchAs(t, user, url, { message_template: 'New {{ payload.x }}' });
    expect(retemplated).toMatchObject({ name: 'after', message_template: 'New {{ payload.x }}', enabled: true });
    expect((await api(user, 'GET', url)).json()).toEqual(retemplated);

    const fired = await deliver(t, created.uuid, { body: { x: 'value' }, secret });
    expect(fired.statusCode, fired.body).toBe(202);
    expect((await getTask(t, user, agent, fired.json().task_id)).message).toBe('New value');

    expect(await patchAs(t, user, url, { enabled: false })).toMatchObject({ enabled: false, name: 'after' });
    expectErrorEnvelope(await deliver(t, created.uuid, { body: { x: 1 }, secret }), 403, 'TRIGGER_DISABLED');
    expect(await patchAs(t, user, url, { enabled: true, name: 'both' })).toMatchObject({ enabled: true, name: 'both' });
    expect((await deliver(t, created.uuid, { body: { x: 1 }, secret })).statusCode).toBe(202);

    const before = (await api(user, 'GET', url)).json();
    for (const [body, field] of [
      [{ message_template: 'bad {{payload..x}}' }, 'message_template'],
      [{ name: 'x'.repeat(256) }, 'name'],
      [{ name: 'ok', message_template: '{{nope}}' }, 'message_template'],
      [{ webhook_secret: 'whs_mine' }, 'webhook_secret'],
    ] as const) {
      expectErrorEnvelope(await api(user, 'PATCH', url, body), 400, 'INVALID_REQUEST', field);
    }
    expect((await api(user, 'GET', url)).json()).toEqual(before);

    const removed = await api(user, 'DELETE', url);
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    for (const [method, path] of [
      ['GET', url],
      ['PATCH', url],
      ['DELETE', url],
      ['GET', `${url}/deliveries`],
      ['POST', `${url}/rotate_secret`],
    ] as const) {
      const res = await api(user, method, path, method === 'PATCH' ? { name: 'x' } : undefined);
      expectErrorEnvelope(res, 404, 'NOT_FOUND');
    }
    expectErrorEnvelope(await deliver(t, created.uuid, { body: { x: 1 }, secret }), 404, 'NOT_FOUND');
    expect((await api(user, 'GET', base(agent))).json().pagination.total).toBe(0);
    // The tasks it created stay with the agent.
    expect((await listTasks(t, user, agent)).pagination.total).toBe(2);
  });

  it("answers 404 for another user's agent or trigger, and for a trigger under another agent", async () => {
    const { user: me, agent: mine } = await setup();
    const { user: other, agent: theirs } = await setup();
    const myTrigger = await createTrigger(t, me, mine);
    const theirTrigger = await createTrigger(t, other, theirs);
    const mySecondAgent = (await createAgent(t, me)).uuid;

    const refused: Array<[string, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown?]> = [
      ['create on their agent', 'POST', base(theirs), { name: 'n', message_template: 'm' }],
      ['create on a missing agent', 'POST', base(randomUUID()), { name: 'n', message_template: 'm' }],
      ['list their agent', 'GET', base(theirs)],
      ['get their trigger via their agent', 'GET', `${base(theirs)}/${theirTrigger.uuid}`],
      ['get their trigger via my agent', 'GET', `${base(mine)}/${theirTrigger.uuid}`],
      ['get my trigger via my other agent', 'GET', `${base(mySecondAgent)}/${myTrigger.uuid}`],
      ['patch their trigger', 'PATCH', `${base(mine)}/${theirTrigger.uuid}`, { enabled: false }],
      ['delete their trigger', 'DELETE', `${base(mine)}/${theirTrigger.uuid}`],
      ['rotate their secret', 'POST', `${base(mine)}/${theirTrigger.uuid}/rotate_secret`],
      ['read their deliveries', 'GET', `${base(mine)}/${theirTrigger.uuid}/deliveries`],
      ['delete my trigger via my other agent', 'DELETE', `${base(mySecondAgent)}/${myTrigger.uuid}`],
    ];
    for (const [name, method, url, body] of refused) {
      const res = await api(me, method, url, body);
      expect({ name, status: res.statusCode }).toEqual({ name, status: 404 });
      expectErrorEnvelope(res, 404, 'NOT_FOUND');
      expect(res.body).not.toContain(theirTrigger.uuid);
    }
    const { webhook_secret: _, ...theirView } = theirTrigger;
    expect((await api(other, 'GET', `${base(theirs)}/${theirTrigger.uuid}`)).json()).toEqual(theirView);
    expect((await deliver(t, theirTrigger.uuid, { body: {}, secret: theirTrigger.webhook_secret })).statusCode).toBe(
      202,
    );
    expect((await api(me, 'GET', `${base(mine)}/${myTrigger.uuid}`)).statusCode).toBe(200);
    expect((await api(other, 'GET', base(theirs))).json().pagination.total).toBe(1);
  });

  it('deleting the agent deletes its triggers and their addresses', async () => {
    const { user, agent } = await setup();
    const keep = (await createAgent(t, user)).uuid;
    const gone = [await createTrigger(t, user, agent), await createTrigger(t, user, agent)];
    const kept = await createTrigger(t, user, keep);
    for (const trigger of gone) {
      expect((await deliver(t, trigger.uuid, { body: {}, secret: trigger.webhook_secret })).statusCode).toBe(202);
    }
    expect((await api(user, 'DELETE', `/agent/${agent}`)).statusCode).toBe(204);
    for (const trigger of gone) {
      expectErrorEnvelope(
        await deliver(t, trigger.uuid, { body: {}, secret: trigger.webhook_secret }),
        404,
        'NOT_FOUND',
      );
      expectErrorEnvelope(await api(user, 'GET', `${base(agent)}/${trigger.uuid}`), 404, 'NOT_FOUND');
    }
    expectErrorEnvelope(await api(user, 'GET', base(agent)), 404, 'NOT_FOUND');
    expect((await deliver(t, kept.uuid, { body: {}, secret: kept.webhook_secret })).statusCode).toBe(202);
  });

  it('rotate_secret answers the trigger with a new secret; old and new both work at once', async () => {
    const { user, agent } = await setup();
    const created = await createTrigger(t, user, agent, { message_template: '{{payload.n}}' });
    const res = await api(user, 'POST', `${base(agent)}/${created.uuid}/rotate_secret`);
    expect(res.statusCode, res.body).toBe(200);
    const rotated = res.json() as CreatedTrigger;
    expect(Object.keys(rotated).sort()).toEqual([...VIEW_KEYS, 'webhook_secret'].sort());
    expectWebhookSecret(rotated.webhook_secret);
    expect(rotated.webhook_secret).not.toBe(created.webhook_secret);
    const { webhook_secret: _old, updated_at: _u1, ...before } = created;
    const { webhook_secret: _new, updated_at: _u2, ...after } = rotated;
    expect(after).toEqual(before);
    expectNoSecret(await api(user, 'GET', `${base(agent)}/${created.uuid}`), rotated.webhook_secret);

    const body = JSON.stringify({ n: 1 });
    for (const secret of [created.webhook_secret, rotated.webhook_secret]) {
      expect((await deliver(t, created.uuid, { body, secret })).statusCode).toBe(202);
      expect((await deliver(t, created.uuid, { body, signature: await sign(secret, body) })).statusCode).toBe(202);
    }
    expect((await listTasks(t, user, agent)).pagination.total).toBe(4);
  });

  it('keeps an agent at 1,000 triggers, also when creates race', async () => {
    const { user, agent } = await setup();
    const create = () => api(user, 'POST', base(agent), { name: 'many', message_template: 'm' });
    const answers: LightMyRequestResponse[] = [];
    // 50 at once up to 950 (more would queue past the pool's 5 s connection timeout on a loaded
    // PostgreSQL), then 60 racing for the last 50 places.
    for (const size of [...Array.from({ length: 19 }, () => 50), 60]) {
      answers.push(...(await Promise.all(Array.from({ length: size }, create))));
    }
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(1000);
    const refused = answers.filter((r) => r.statusCode !== 201);
    expect(refused).toHaveLength(10);
    for (const res of refused) expectErrorEnvelope(res, 400, 'INVALID_REQUEST');
    expect((await api(user, 'GET', base(agent))).json().pagination.total).toBe(1000);
  }, 120_000);
});

describe.each(DATABASES)('secret rotation over time on $name', (database) => {
  // Starts a day in the past and ends near real time: the jump never runs this app's clock ahead
  // of the other files sharing PostgreSQL (rate-limit windows), and its sweeper stays idle.
  const clock = manualClock(Date.now() - DAY - 60_000);
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { sweepIntervalMs: DAY } });
  });
  afterAll(() => t.close());

  it('after rotate_secret the old secret works for 24 hours, then only the new one', async () => {
    // Platform keys: a session JWT would expire when the clock moves a day.
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const created = await createTrigger(t, user, agent);
    const rotate = await call(t.app, 'POST', `/v1/agent/${agent}/triggers/${created.uuid}/rotate_secret`, {
      headers: workerHeaders(user),
    });
    expect(rotate.statusCode, rotate.body).toBe(200);
    const rotatedAt = clock.now();
    const [oldSecret, newSecret] = [created.webhook_secret, rotate.json().webhook_secret as string];
    const body = JSON.stringify({ repository: { name: 'r' } });
    const fire = async (secret: string) => [
      (await deliver(t, created.uuid, { body, secret })).statusCode,
      (await deliver(t, created.uuid, { body, signature: await sign(secret, body) })).statusCode,
    ];

    expect(await fire(oldSecret)).toEqual([202, 202]);
    clock.set(rotatedAt + DAY - 1000);
    expect(await fire(oldSecret)).toEqual([202, 202]);
    expect(await fire(newSecret)).toEqual([202, 202]);

    clock.set(rotatedAt + DAY + 1000);
    expectFlatError(
      await deliver(t, created.uuid, { body, secret: oldSecret }),
      401,
      'Invalid webhook secret or signature',
    );
    expect(await fire(oldSecret)).toEqual([401, 401]);
    expect(await fire(newSecret)).toEqual([202, 202]);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(8);

    // A second rotation keeps the secret it replaces for another day.
    const again = await call(t.app, 'POST', `/v1/agent/${agent}/triggers/${created.uuid}/rotate_secret`, {
      headers: workerHeaders(user),
    });
    const newest = again.json().webhook_secret as string;
    expect(await fire(newSecret)).toEqual([202, 202]);
    expect(await fire(newest)).toEqual([202, 202]);
    expect(await fire(oldSecret)).toEqual([401, 401]);
  });
});
