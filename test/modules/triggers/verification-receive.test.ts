import { createHmac, randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { expectErrorEnvelope, expectFlatError, expectStandardHeaders } from '../../helpers/routes.js';
import { getTask, listTasks, workerHeaders } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, deliver, patchAs } from '../../helpers/triggers.js';

const MISSING = 'Webhook secret or signature is required';
const INVALID = 'Invalid webhook secret or signature';
const STRIPE_SECRET = 'whsec_stripe_test_0123456789abcdef';
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';

const hex = (key: string, ...parts: string[]) => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

/** `Stripe-Signature` as Stripe documents it: `t=<unix seconds>,v1=<hex HMAC of "{t}.{body}">`. */
const stripeSignature = (secret: string, t: number, body: string) => `t=${t},v1=${hex(secret, `${t}.${body}`)}`;
/** Slack's two headers for `body` signed at `ts`. */
const slackHeaders = (secret: string, ts: number, body: string) => ({
  'x-slack-request-timestamp': String(ts),
  'x-slack-signature': `v0=${hex(secret, `v0:${ts}:${body}`)}`,
});
/** The three Standard Webhooks headers, signed with the standardwebhooks package. */
const standardHeaders = (secret: string, id: string, atMs: number, body: string) => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(atMs / 1000)),
  'webhook-signature': new Webhook(secret).sign(id, new Date(atMs), body),
});

describe.each(DATABASES)('signature schemes at the webhook address on $name', (database) => {
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

  async function setup(verification: Record<string, unknown>, template = 'Event {{payload.type}}'): Promise<Setup> {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent, { message_template: template, verification });
    return { user, agent, trigger };
  }

  const countTasks = async (s: Setup) => (await listTasks(t, s.user, s.agent)).pagination.total;
  const triggerUrl = (s: Setup) => `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}`;
  const deliveries = async (s: Setup) => {
    const res = await call(t.app, 'GET', `${triggerUrl(s)}/deliveries`, { headers: workerHeaders(s.user) });
    expect(res.statusCode).toBe(200);
    return res.json().deliveries as Array<{ delivery_id: string; status_code: number; task_id: string | null }>;
  };
  const send = (s: Setup, body: string, headers: Record<string, string>, contentType = 'application/json') =>
    deliver(t, s.trigger.uuid, { body, headers, contentType });
  const accepted = (res: LightMyRequestResponse) => {
    expect(res.statusCode, res.body).toBe(202);
    expectStandardHeaders(res);
    return res.json() as { task_id: string; delivery_id: string };
  };

  describe('github', () => {
    it('takes X-Hub-Signature-256 made with the supplied secret, never X-Webhook-Secret', async () => {
      const s = await setup({ type: 'github', secret: 'my github secret' });
      expect(s.trigger.webhook_secret).toBeUndefined();
      expect(s.trigger.verification).toEqual({ type: 'github' });
      const body = JSON.stringify({ type: 'push' });
      const sig = await sign('my github secret', body);
      expectFlatError(await deliver(t, s.trigger.uuid, { body, secret: 'my github secret' }), 401, MISSING);
      expectFlatError(await deliver(t, s.trigger.uuid, { body, signature: await sign('other', body) }), 401, INVALID);
      const ok = accepted(
        await deliver(t, s.trigger.uuid, { body, signature: sig, headers: { 'x-github-delivery': 'gh-1' } }),
      );
      expect(ok.delivery_id).toBe('gh-1');
      expect((await getTask(t, s.user, s.agent, ok.task_id)).message).toBe('Event push');
    });

    it('generates a whs_ secret when none is supplied', async () => {
      const s = await setup({ type: 'github' });
      expect(s.trigger.webhook_secret).toMatch(/^whs_/);
      const body = '{"type":"ping"}';
      accepted(await deliver(t, s.trigger.uuid, { body, signature: await sign(s.trigger.webhook_secret, body) }));
    });
  });

  describe('standard_webhooks', () => {
    it('accepts a delivery signed by the standardwebhooks package; webhook-id is the delivery id', async () => {
      const s = await setup({ type: 'standard_webhooks' });
      expect(s.trigger.webhook_secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
      expect(Buffer.from(s.trigger.webhook_secret.slice(6), 'base64')).toHaveLength(32);
      expect(s.trigger.verification).toEqual({ type: 'standard_webhooks', tolerance_seconds: 300 });
      const body = JSON.stringify({ type: 'invoice.paid', data: { total: 3 } });
      const headers = standardHeaders(s.trigger.webhook_secret, 'msg_1', clock.now(), body);
      const first = accepted(await send(s, body, headers));
      expect(first.delivery_id).toBe('msg_1');
      expect((await getTask(t, s.user, s.agent, first.task_id)).message).toBe('Event invoice.paid');
      // The sender's retry (same id, signed again later) answers the first 202 and creates nothing.
      clock.advance(30_000);
      const retry = await send(s, body, standardHeaders(s.trigger.webhook_secret, 'msg_1', clock.now(), body));
      expect(accepted(retry)).toEqual(first);
      expect(await countTasks(s)).toBe(1);
    });

    it('needs all three headers, a fresh timestamp within tolerance_seconds and a v1 signature', async () => {
      const s = await setup({ type: 'standard_webhooks', tolerance_seconds: 60 });
      const secret = s.trigger.webhook_secret;
      const body = '{"type":"x"}';
      const good = standardHeaders(secret, 'msg_a', clock.now(), body);
      for (const name of Object.keys(good)) {
        const partial: Record<string, string> = { ...good };
        delete partial[name];
        expectFlatError(await send(s, body, partial), 401, MISSING);
      }
      expectFlatError(await send(s, body, standardHeaders(secret, 'msg_a', clock.now() - 61_000, body)), 401, INVALID);
      expectFlatError(await send(s, body, standardHeaders(secret, 'msg_a', clock.now() + 61_000, body)), 401, INVALID);
      expectFlatError(
        await send(s, body, { ...good, 'webhook-signature': good['webhook-signature'].replace('v1,', 'v2,') }),
        401,
        INVALID,
      );
      expectFlatError(await send(s, body, { ...good, 'webhook-id': 'msg_b' }), 401, INVALID);
      expectFlatError(await send(s, `${body} `, good), 401, INVALID);
      // The stale delivery passes once the tolerance is widened.
      const old = standardHeaders(secret, 'msg_c', clock.now() - 600_000, body);
      expectFlatError(await send(s, body, old), 401, INVALID);
      await patchAs(t, s.user, triggerUrl(s), { verification: { type: 'standard_webhooks', tolerance_seconds: 3600 } });
      accepted(await send(s, body, old));
      expect(await countTasks(s)).toBe(1);
    });

    it('accepts a supplied whsec_ secret', async () => {
      const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
      const s = await setup({ type: 'standard_webhooks', secret });
      expect(s.trigger.webhook_secret).toBeUndefined();
      const body = '{"type":"y"}';
      accepted(await send(s, body, standardHeaders(secret, randomUUID(), clock.now(), body)));
    });
  });

  describe('stripe', () => {
    it("verifies Stripe-Signature; the event id deduplicates Stripe's retries", async () => {
      const s = await setup({ type: 'stripe', secret: STRIPE_SECRET });
      expect(s.trigger.webhook_secret).toBeUndefined();
      expect(s.trigger.verification).toEqual({ type: 'stripe', tolerance_seconds: 300 });
      const body = JSON.stringify({ id: 'evt_1NG8Du2eZvKYlo2C', type: 'charge.succeeded' });
      const header = `${stripeSignature(STRIPE_SECRET, nowS(), body)},v0=${'0'.repeat(64)}`;
      const first = accepted(await send(s, body, { 'stripe-signature': header }));
      expect(first.delivery_id).toBe('evt_1NG8Du2eZvKYlo2C');
      expect((await getTask(t, s.user, s.agent, first.task_id)).message).toBe('Event charge.succeeded');
      clock.advance(60_000);
      const retry = await send(s, body, { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), body) });
      expect(accepted(retry)).toEqual(first);
      expect(await countTasks(s)).toBe(1);
      // Without an event id, section 7's headers (or a new UUID) name the delivery.
      const bare = '{"type":"x"}';
      const sig = { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), bare) };
      expect(accepted(await send(s, bare, { ...sig, 'idempotency-key': 'k-1' })).delivery_id).toBe('k-1');
      // (Signed a second later: the same signature again would be a copy of the first, see replays.)
      clock.advance(1000);
      const later = { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), bare) };
      expect(accepted(await send(s, bare, later)).delivery_id).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('refuses a missing, malformed, stale or wrong Stripe-Signature', async () => {
      const s = await setup({ type: 'stripe', secret: STRIPE_SECRET, tolerance_seconds: 10 });
      const body = '{"id":"evt_2"}';
      expectFlatError(await send(s, body, {}), 401, MISSING);
      expectFlatError(await send(s, body, { 'x-webhook-secret': STRIPE_SECRET }), 401, MISSING);
      const v1 = hex(STRIPE_SECRET, `${nowS()}.${body}`);
      for (const bad of [
        `v1=${v1}`,
        `t=${nowS()},t=${nowS()},v1=${v1}`,
        `t=${nowS()},v0=${v1}`,
        `t=${nowS()},v1=${v1},junk`,
        stripeSignature(STRIPE_SECRET, nowS() - 11, body),
        stripeSignature('whsec_other', nowS(), body),
        '',
      ]) {
        expectFlatError(await send(s, body, { 'stripe-signature': bad }), 401, INVALID);
      }
      expect(await countTasks(s)).toBe(0);
    });
  });

  describe('slack', () => {
    it("verifies Slack's signature; event_id deduplicates Slack's retries", async () => {
      const s = await setup({ type: 'slack', signing_secret: SLACK_SECRET }, 'Slack {{payload.event.text}}');
      expect(s.trigger.webhook_secret).toBeUndefined();
      expect(s.trigger.verification).toEqual({ type: 'slack', tolerance_seconds: 300 });
      const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev08MFMKH6', event: { text: 'hello' } });
      const first = accepted(await send(s, body, slackHeaders(SLACK_SECRET, nowS(), body)));
      expect(first.delivery_id).toBe('Ev08MFMKH6');
      expect((await getTask(t, s.user, s.agent, first.task_id)).message).toBe('Slack hello');
      clock.advance(5_000);
      const retry = await send(s, body, { ...slackHeaders(SLACK_SECRET, nowS(), body), 'x-slack-retry-num': '1' });
      expect(accepted(retry)).toEqual(first);
      expect(await countTasks(s)).toBe(1);
    });

    it('refuses a missing header, a stale timestamp or a wrong signature', async () => {
      const s = await setup({ type: 'slack', signing_secret: SLACK_SECRET });
      const body = '{"type":"event_callback"}';
      const good = slackHeaders(SLACK_SECRET, nowS(), body);
      expectFlatError(await send(s, body, { 'x-slack-signature': good['x-slack-signature'] }), 401, MISSING);
      expectFlatError(
        await send(s, body, { 'x-slack-request-timestamp': good['x-slack-request-timestamp'] }),
        401,
        MISSING,
      );
      expectFlatError(await send(s, body, slackHeaders(SLACK_SECRET, nowS() - 301, body)), 401, INVALID);
      expectFlatError(await send(s, body, slackHeaders('other', nowS(), body)), 401, INVALID);
      expectFlatError(await send(s, body, { ...good, 'x-slack-request-timestamp': `${nowS()}.0` }), 401, INVALID);
      expect(await countTasks(s)).toBe(0);
    });

    it('answers URL verification with the challenge, even when disabled, and logs it without a task', async () => {
      const s = await setup({ type: 'slack', signing_secret: SLACK_SECRET });
      await patchAs(t, s.user, triggerUrl(s), { enabled: false });
      const body = JSON.stringify({
        token: 'x',
        challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
        type: 'url_verification',
      });
      const res = await send(s, body, slackHeaders(SLACK_SECRET, nowS(), body));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
      expectStandardHeaders(res);
      expect(await countTasks(s)).toBe(0);
      const [logged] = await deliveries(s);
      expect(logged).toMatchObject({ status_code: 200, task_id: null, error: null });
      // Unsigned, it is refused like any delivery; other events on the disabled trigger are 403.
      expectFlatError(await send(s, body, {}), 401, MISSING);
      const event = '{"type":"event_callback","event_id":"Ev1"}';
      expectErrorEnvelope(await send(s, event, slackHeaders(SLACK_SECRET, nowS(), event)), 403, 'TRIGGER_DISABLED');
    });

    it('reads a slash command (a form without payload) as the object of its fields', async () => {
      const s = await setup(
        { type: 'slack', signing_secret: SLACK_SECRET },
        '{{payload.command}} {{payload.text}} by {{payload.user_name}}',
      );
      const body = 'command=%2Fdeploy&text=first&text=api+now&user_name=roadrunner&trigger_id=1.2.3';
      const res = await send(s, body, slackHeaders(SLACK_SECRET, nowS(), body), 'application/x-www-form-urlencoded');
      const { task_id } = accepted(res);
      expect((await getTask(t, s.user, s.agent, task_id)).message).toBe('/deploy api now by roadrunner');
      // A form with a payload field (interactive components) is read as section 7 says.
      const interactive = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', command: '/x', text: 'y', user_name: 'z' }))}`;
      const second = await send(
        s,
        interactive,
        slackHeaders(SLACK_SECRET, nowS(), interactive),
        'application/x-www-form-urlencoded',
      );
      expect((await getTask(t, s.user, s.agent, accepted(second).task_id)).message).toBe('/x y by z');
      // On other schemes a form without payload stays a 400.
      const other = await setup({ type: 'stripe', secret: STRIPE_SECRET });
      const form = 'a=1';
      const refused = await send(
        other,
        form,
        { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), form) },
        'application/x-www-form-urlencoded',
      );
      expectErrorEnvelope(refused, 400, 'INVALID_REQUEST');
    });
  });

  it('checks in the documented order: 404, 401 required, 401 invalid, 415, 400, Slack challenge, 403, 503', async () => {
    const s = await setup({ type: 'slack', signing_secret: SLACK_SECRET });
    const signed = (body: string, contentType = 'application/json') =>
      send(s, body, slackHeaders(SLACK_SECRET, nowS(), body), contentType);
    await patchAs(t, s.user, triggerUrl(s), { enabled: false });
    await patchAs(t, s.user, `/agent/${s.agent}`, { status: 'paused' });
    const unknown = await deliver(t, randomUUID(), { body: '{', headers: slackHeaders(SLACK_SECRET, nowS(), '{') });
    expectErrorEnvelope(unknown, 404, 'NOT_FOUND');
    expectFlatError(await send(s, '{', {}, 'text/plain'), 401, MISSING);
    expectFlatError(await send(s, '{', slackHeaders('wrong', nowS(), '{'), 'text/plain'), 401, INVALID);
    expectErrorEnvelope(await signed('{', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectErrorEnvelope(await signed('{'), 400, 'INVALID_REQUEST');
    expect((await signed('{"type":"url_verification","challenge":"c"}')).statusCode).toBe(200);
    expectErrorEnvelope(await signed('{"type":"event_callback"}'), 403, 'TRIGGER_DISABLED');
    await patchAs(t, s.user, triggerUrl(s), { enabled: true });
    expectErrorEnvelope(await signed('{"type":"event_callback"}'), 503, 'AGENT_UNAVAILABLE');
    expect(await countTasks(s)).toBe(0);
    const logged = (await deliveries(s)).map((d) => d.status_code).reverse();
    expect(logged).toEqual([401, 401, 415, 400, 200, 403, 503]);
  });

  it('logs refusals after parsing under the scheme id (Stripe event id, Slack event_id)', async () => {
    const stripe = await setup({ type: 'stripe', secret: STRIPE_SECRET });
    await patchAs(t, stripe.user, triggerUrl(stripe), { enabled: false });
    const body = '{"id":"evt_disabled_1"}';
    const refused = await send(stripe, body, { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), body) });
    expectErrorEnvelope(refused, 403, 'TRIGGER_DISABLED');
    expect((await deliveries(stripe))[0]).toMatchObject({ delivery_id: 'evt_disabled_1', status_code: 403 });
    const slack = await setup({ type: 'slack', signing_secret: SLACK_SECRET });
    await patchAs(t, slack.user, `/agent/${slack.agent}`, { status: 'paused' });
    const event = '{"type":"event_callback","event_id":"Ev_paused"}';
    expectErrorEnvelope(await send(slack, event, slackHeaders(SLACK_SECRET, nowS(), event)), 503, 'AGENT_UNAVAILABLE');
    expect((await deliveries(slack))[0]).toMatchObject({ delivery_id: 'Ev_paused', status_code: 503 });
  });

  it('a PATCHed secret applies at once and the old one stops at once', async () => {
    const s = await setup({ type: 'stripe', secret: STRIPE_SECRET });
    const body = '{"id":"evt_p"}';
    const next = 'whsec_next_secret_value';
    await patchAs(t, s.user, triggerUrl(s), { verification: { type: 'stripe', secret: next } });
    const old = await send(s, body, { 'stripe-signature': stripeSignature(STRIPE_SECRET, nowS(), body) });
    expectFlatError(old, 401, INVALID);
    accepted(await send(s, body, { 'stripe-signature': stripeSignature(next, nowS(), body) }));
    // Left out, the secret is kept.
    await patchAs(t, s.user, triggerUrl(s), { verification: { type: 'stripe', tolerance_seconds: 30 } });
    const again = '{"id":"evt_q"}';
    accepted(await send(s, again, { 'stripe-signature': stripeSignature(next, nowS(), again) }));
  });

  it('rotating a generated Standard Webhooks secret gives whsec_…; the previous one works for 24 h', async () => {
    const s = await setup({ type: 'standard_webhooks' });
    const res = await call(t.app, 'POST', `${triggerUrl(s)}/rotate_secret`, { headers: workerHeaders(s.user) });
    expect(res.statusCode, res.body).toBe(200);
    const rotated = res.json().webhook_secret as string;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(s.trigger.webhook_secret);
    const body = '{"type":"r"}';
    for (const secret of [s.trigger.webhook_secret, rotated]) {
      accepted(await send(s, body, standardHeaders(secret, randomUUID(), clock.now(), body)));
    }
    clock.advance(24 * 3600_000 + 1000);
    const old = await send(s, body, standardHeaders(s.trigger.webhook_secret, randomUUID(), clock.now(), body));
    expectFlatError(old, 401, INVALID);
    accepted(await send(s, body, standardHeaders(rotated, randomUUID(), clock.now(), body)));
  });
});
