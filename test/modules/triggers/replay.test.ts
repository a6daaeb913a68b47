import { createHmac, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listTasks, workerHeaders } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, deliver } from '../../helpers/triggers.js';

const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const STRIPE_SECRET = 'whsec_stripe_test_0123456789abcdef';
const GITHUB_SECRET = 'my github secret';
const HOUR = 3_600_000;

const hex = (key: string, text: string) => createHmac('sha256', key).update(text).digest('hex');

describe.each(DATABASES)('signed deliveries cannot be replayed on $name', (database) => {
  let t: TestApp;
  const clock = manualClock();
  const nowS = () => Math.floor(clock.now() / 1000);

  beforeAll(async () => {
    t = await buildTestApp(database, { clock });
  });
  afterAll(() => t.close());

  interface Setup {
    user: TestUser;
    agent: string;
    trigger: CreatedTrigger;
  }
  async function setup(verification: Record<string, unknown>): Promise<Setup> {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent, { message_template: 'Event', verification });
    return { user, agent, trigger };
  }
  const countTasks = async (s: Setup) => (await listTasks(t, s.user, s.agent)).pagination.total;
  const deliveries = async (s: Setup) => {
    const url = `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}/deliveries`;
    const res = await call(t.app, 'GET', url, { headers: workerHeaders(s.user) });
    return res.json().deliveries as Array<{ delivery_id: string; status_code: number; task_id: string | null }>;
  };
  const send = (s: Setup, body: string, headers: Record<string, string>, contentType = 'application/json') =>
    deliver(t, s.trigger.uuid, { body, headers, contentType });
  const accepted = (res: LightMyRequestResponse) => {
    expect(res.statusCode, res.body).toBe(202);
    return res.json() as { task_id: string; delivery_id: string };
  };

  it('a signed Slack slash command sent three times makes one task; its delivery id is the trigger_id', async () => {
    const s = await setup({ type: 'slack', signing_secret: SLACK_SECRET });
    const body = 'command=%2Fdeploy&text=prod&trigger_id=13345224609.738474920.8088930838d88f008e0';
    const ts = nowS();
    const headers = {
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${hex(SLACK_SECRET, `v0:${ts}:${body}`)}`,
    };
    const form = 'application/x-www-form-urlencoded';
    const first = accepted(await send(s, body, headers, form));
    expect(first.delivery_id).toBe('13345224609.738474920.8088930838d88f008e0');
    // The same bytes again, twice: the same signature.
    expect(accepted(await send(s, body, headers, form))).toEqual(first);
    expect(accepted(await send(s, body, headers, form))).toEqual(first);
    // Re-signed with a new timestamp: a new signature, but the same trigger_id, so the same delivery.
    clock.advance(5_000);
    const ts2 = nowS();
    const resigned = {
      'x-slack-request-timestamp': String(ts2),
      'x-slack-signature': `v0=${hex(SLACK_SECRET, `v0:${ts2}:${body}`)}`,
    };
    expect(accepted(await send(s, body, resigned, form))).toEqual(first);
    expect(await countTasks(s)).toBe(1);
    const log = await deliveries(s);
    expect(log).toHaveLength(4);
    for (const entry of log) {
      expect(entry).toMatchObject({ delivery_id: first.delivery_id, status_code: 202, task_id: first.task_id });
    }
  });

  it('a GitHub delivery re-sent with a new X-GitHub-Delivery is the same delivery for 24 h', async () => {
    const s = await setup({ type: 'github', secret: GITHUB_SECRET });
    const body = JSON.stringify({ action: 'opened', number: 7 });
    const signature = `sha256=${hex(GITHUB_SECRET, body)}`;
    const first = accepted(await send(s, body, { 'x-hub-signature-256': signature, 'x-github-delivery': 'd-1' }));
    clock.advance(23 * HOUR);
    // A new delivery id, and the hex in capitals: the same signature bytes.
    const upper = `sha256=${hex(GITHUB_SECRET, body).toUpperCase()}`;
    const again = await send(s, body, { 'x-hub-signature-256': upper, 'x-github-delivery': randomUUID() });
    expect(accepted(again)).toEqual(first);
    expect(await countTasks(s)).toBe(1);
    // A refused delivery is never remembered, nor a duplicate.
    const wrong = await send(s, '{"other":1}', { 'x-hub-signature-256': signature, 'x-github-delivery': 'd-2' });
    expect(wrong.statusCode).toBe(401);
    // After 24 h the signature is forgotten: byte-identical bodies make a new delivery.
    clock.advance(2 * HOUR);
    const later = accepted(await send(s, body, { 'x-hub-signature-256': signature, 'x-github-delivery': 'd-3' }));
    expect(later.task_id).not.toBe(first.task_id);
    expect(await countTasks(s)).toBe(2);
  });

  it('Stripe and Standard Webhooks: extra or reordered entries and a new delivery id change nothing', async () => {
    const stripe = await setup({ type: 'stripe', secret: STRIPE_SECRET });
    const body = '{"type":"invoice.paid"}'; // no top-level id: the headers would name the delivery
    const v1 = hex(STRIPE_SECRET, `${nowS()}.${body}`);
    const first = accepted(await send(stripe, body, { 'stripe-signature': `t=${nowS()},v1=${v1}` }));
    const shuffled = `v1=${'ab'.repeat(32)},v0=00,t=${nowS()},v1=${v1}`;
    const copy = await send(stripe, body, { 'stripe-signature': shuffled, 'idempotency-key': 'new-key' });
    expect(accepted(copy)).toEqual(first);
    expect(await countTasks(stripe)).toBe(1);

    const standard = await setup({ type: 'standard_webhooks' });
    const secret = standard.trigger.webhook_secret as string;
    const id = 'msg_1';
    const signed = new Webhook(secret).sign(id, new Date(clock.now()), body);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(nowS()), 'webhook-signature': signed };
    const one = accepted(await send(standard, body, headers));
    const more = { ...headers, 'webhook-signature': `v2,abc ${signed} v1,${Buffer.alloc(32).toString('base64')}` };
    expect(accepted(await send(standard, body, more))).toEqual(one);
    expect(await countTasks(standard)).toBe(1);
  });

  it('concurrent copies: all answer the same 202, one task in all', async () => {
    const s = await setup({ type: 'github', secret: GITHUB_SECRET });
    const body = JSON.stringify({ action: 'synchronize', n: randomUUID() });
    const signature = `sha256=${hex(GITHUB_SECRET, body)}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        send(s, body, { 'x-hub-signature-256': signature, 'x-github-delivery': `copy-${i}` }),
      ),
    );
    const bodies = answers.map(accepted);
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    expect(await countTasks(s)).toBe(1);
    expect(await deliveries(s)).toHaveLength(8);
  });
});
