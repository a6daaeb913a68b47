import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { expectErrorEnvelope } from '../../helpers/routes.js';
import { workerHeaders } from '../../helpers/tasks.js';
import { createTrigger, deliver, patchAs } from '../../helpers/triggers.js';

const STRIPE_SECRET = 'whsec_manage_stripe_secret_abc';
const SLACK_SECRET = 'slack-signing-secret-0123456789';
const GITHUB_SECRET = 'a github secret with spaces';
const STANDARD_SECRET = `whsec_${randomBytes(40).toString('base64')}`;
const SUPPLIED = [STRIPE_SECRET, SLACK_SECRET, GITHUB_SECRET, STANDARD_SECRET];

/** Bodies `verification` refuses, and the field the 400 names. */
const BAD: Array<[string, unknown, string]> = [
  ['a string', 'github', 'verification'],
  ['null', null, 'verification'],
  ['no type', { secret: 'x' }, 'verification.type'],
  ['an unknown type', { type: 'svix' }, 'verification'],
  ['an unknown field', { type: 'github', secrets: 'x' }, 'verification.secrets'],
  ['a tolerance on github', { type: 'github', tolerance_seconds: 30 }, 'verification.tolerance_seconds'],
  ['a secret on secret', { type: 'secret', secret: 'x' }, 'verification.secret'],
  ['stripe without secret', { type: 'stripe' }, 'verification.secret'],
  ['slack without signing_secret', { type: 'slack' }, 'verification.signing_secret'],
  ['slack with secret', { type: 'slack', secret: 'x', signing_secret: 'y' }, 'verification.secret'],
  ['a stripe secret without whsec_', { type: 'stripe', secret: 'sk_live_abc' }, 'verification.secret'],
  ['a stripe secret with a space', { type: 'stripe', secret: 'whsec_a b' }, 'verification.secret'],
  ['a stripe secret that is only whsec_', { type: 'stripe', secret: 'whsec_' }, 'verification.secret'],
  ['a slack secret with whitespace', { type: 'slack', signing_secret: 'abc\tdef' }, 'verification.signing_secret'],
  ['an empty slack secret', { type: 'slack', signing_secret: '' }, 'verification.signing_secret'],
  ['an empty github secret', { type: 'github', secret: '' }, 'verification.secret'],
  ['a github secret of 256 characters', { type: 'github', secret: 'x'.repeat(256) }, 'verification.secret'],
  ['a stripe secret of 256 characters', { type: 'stripe', secret: `whsec_${'x'.repeat(250)}` }, 'verification.secret'],
  [
    'a Standard Webhooks secret of 23 bytes',
    { type: 'standard_webhooks', secret: `whsec_${randomBytes(23).toString('base64')}` },
    'verification.secret',
  ],
  [
    'a Standard Webhooks secret of 65 bytes',
    { type: 'standard_webhooks', secret: `whsec_${randomBytes(65).toString('base64')}` },
    'verification.secret',
  ],
  [
    'a Standard Webhooks secret without whsec_',
    { type: 'standard_webhooks', secret: 'not-a-whsec-secret' },
    'verification.secret',
  ],
  [
    'a tolerance of 0',
    { type: 'stripe', secret: STRIPE_SECRET, tolerance_seconds: 0 },
    'verification.tolerance_seconds',
  ],
  [
    'a tolerance of 86401',
    { type: 'slack', signing_secret: 'x', tolerance_seconds: 86_401 },
    'verification.tolerance_seconds',
  ],
  [
    'a tolerance as a string',
    { type: 'standard_webhooks', tolerance_seconds: '300' },
    'verification.tolerance_seconds',
  ],
  ['a fractional tolerance', { type: 'standard_webhooks', tolerance_seconds: 1.5 }, 'verification.tolerance_seconds'],
];

describe.each(DATABASES)('trigger verification management on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  async function owner() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    return { user, agent };
  }
  const post = (user: TestUser, agent: string, body: Record<string, unknown>) =>
    call(t.app, 'POST', `/v1/agent/${agent}/triggers`, {
      headers: workerHeaders(user),
      body: { name: 'n', message_template: 'm', ...body },
    });
  const patch = (user: TestUser, url: string, body: Record<string, unknown>) =>
    call(t.app, 'PATCH', url, { headers: workerHeaders(user), body });
  const expectNoSecret = (res: LightMyRequestResponse) => {
    for (const secret of SUPPLIED) expect(res.body).not.toContain(secret);
  };

  it.each(BAD)('refuses %s with 400 naming the field, and creates nothing', async (_, verification, field) => {
    const { user, agent } = await owner();
    const res = await post(user, agent, { verification });
    const body = expectErrorEnvelope(res, 400, 'INVALID_REQUEST', field);
    // The refused secret itself is never echoed (the pattern it failed may be).
    const { type: _type, ...rest } = (typeof verification === 'object' && verification ? verification : {}) as Record<
      string,
      unknown
    >;
    for (const value of Object.values(rest)) {
      if (typeof value === 'string' && value.length > 2) expect(JSON.stringify(body.error)).not.toContain(value);
    }
    const list = await call(t.app, 'GET', `/v1/agent/${agent}/triggers`, { headers: workerHeaders(user) });
    expect(list.json().pagination.total).toBe(0);
  });

  it('shows verification without secrets, and webhook_secret only when generated', async () => {
    const { user, agent } = await owner();
    const cases: Array<[Record<string, unknown> | undefined, Record<string, unknown>, boolean]> = [
      [undefined, { type: 'secret' }, true],
      [{ type: 'secret' }, { type: 'secret' }, true],
      [{ type: 'github' }, { type: 'github' }, true],
      [{ type: 'github', secret: GITHUB_SECRET }, { type: 'github' }, false],
      [{ type: 'standard_webhooks' }, { type: 'standard_webhooks', tolerance_seconds: 300 }, true],
      [
        { type: 'standard_webhooks', secret: STANDARD_SECRET, tolerance_seconds: 86_400 },
        { type: 'standard_webhooks', tolerance_seconds: 86_400 },
        false,
      ],
      [{ type: 'stripe', secret: STRIPE_SECRET }, { type: 'stripe', tolerance_seconds: 300 }, false],
      [
        { type: 'slack', signing_secret: SLACK_SECRET, tolerance_seconds: 1 },
        { type: 'slack', tolerance_seconds: 1 },
        false,
      ],
    ];
    for (const [verification, shown, generated] of cases) {
      const res = await post(user, agent, verification ? { verification } : {});
      expect(res.statusCode, res.body).toBe(201);
      expectNoSecret(res);
      const created = res.json();
      expect(created.verification).toEqual(shown);
      expect('webhook_secret' in created).toBe(generated);
      const got = await call(t.app, 'GET', `/v1/agent/${agent}/triggers/${created.uuid}`, {
        headers: workerHeaders(user),
      });
      expect(got.json().verification).toEqual(shown);
      expect(got.json().webhook_secret).toBeUndefined();
    }
    const list = await call(t.app, 'GET', `/v1/agent/${agent}/triggers?limit=100`, { headers: workerHeaders(user) });
    expectNoSecret(list);
    expect(list.json().triggers).toHaveLength(cases.length);
  });

  it('PATCH keeps the type, changes the tolerance, replaces a supplied secret; audited as verification', async () => {
    const { user, agent } = await owner();
    const trigger = await createTrigger(t, user, agent, { verification: { type: 'stripe', secret: STRIPE_SECRET } });
    const url = `/v1/agent/${agent}/triggers/${trigger.uuid}`;
    for (const type of ['secret', 'github', 'standard_webhooks', 'slack']) {
      const body = type === 'slack' ? { type, signing_secret: 'x' } : { type };
      expectErrorEnvelope(await patch(user, url, { verification: body }), 400, 'INVALID_REQUEST', 'verification.type');
    }
    expectErrorEnvelope(
      await patch(user, url, { verification: { type: 'stripe', secret: 'nope' } }),
      400,
      'INVALID_REQUEST',
      'verification.secret',
    );
    // Stripe's secret may be left out on PATCH: it is kept.
    const widened = await patch(user, url, { verification: { type: 'stripe', tolerance_seconds: 900 } });
    expect(widened.statusCode, widened.body).toBe(200);
    expect(widened.json().verification).toEqual({ type: 'stripe', tolerance_seconds: 900 });
    const replaced = await patch(user, url, { verification: { type: 'stripe', secret: 'whsec_replacement_one' } });
    expect(replaced.json().verification).toEqual({ type: 'stripe', tolerance_seconds: 900 });
    expect(replaced.body).not.toContain('whsec_replacement_one');
    const unchanged = await patch(user, url, {
      verification: { type: 'stripe', tolerance_seconds: 900 },
      name: trigger.name,
    });
    expect(unchanged.statusCode).toBe(200);

    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?limit=100`, { token: user.token });
    const text = audit.body;
    for (const secret of [STRIPE_SECRET, 'whsec_replacement_one']) expect(text).not.toContain(secret);
    const updates = audit
      .json()
      .entries.filter((e: { action: string }) => e.action === 'trigger.update')
      .map((e: { details: { fields: string[] } }) => e.details.fields);
    // Newest first: the tolerance change, the secret replacement; the unchanged PATCH wrote nothing.
    expect(updates).toEqual([['verification'], ['verification']]);
  });

  it('rotate_secret: generated secrets rotate, supplied ones are a 400 on verification', async () => {
    const { user, agent } = await owner();
    const rotate = (uuid: string) =>
      call(t.app, 'POST', `/v1/agent/${agent}/triggers/${uuid}/rotate_secret`, { headers: workerHeaders(user) });
    for (const verification of [
      { type: 'stripe', secret: STRIPE_SECRET },
      { type: 'slack', signing_secret: SLACK_SECRET },
      { type: 'github', secret: GITHUB_SECRET },
      { type: 'standard_webhooks', secret: STANDARD_SECRET },
    ]) {
      const trigger = await createTrigger(t, user, agent, { verification });
      const res = await rotate(trigger.uuid);
      expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'verification');
      expectNoSecret(res);
    }
    for (const [type, prefix] of [
      ['secret', /^whs_/],
      ['github', /^whs_/],
      ['standard_webhooks', /^whsec_/],
    ] as const) {
      const trigger = await createTrigger(t, user, agent, { verification: { type } });
      const res = await rotate(trigger.uuid);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().webhook_secret).toMatch(prefix);
      expect(res.json().verification.type).toBe(type);
    }
    // A generated github secret replaced by PATCH becomes supplied: no longer rotated.
    const github = await createTrigger(t, user, agent, { verification: { type: 'github' } });
    await patchAs(t, user, `/v1/agent/${agent}/triggers/${github.uuid}`, {
      verification: { type: 'github', secret: GITHUB_SECRET },
    });
    expectErrorEnvelope(await rotate(github.uuid), 400, 'INVALID_REQUEST', 'verification');
  });

  it('a trigger without verification behaves as section 7 (X-Webhook-Secret works)', async () => {
    const { user, agent } = await owner();
    const trigger = await createTrigger(t, user, agent);
    expect(trigger.verification).toEqual({ type: 'secret' });
    const res = await deliver(t, trigger.uuid, { body: {}, secret: trigger.webhook_secret });
    expect(res.statusCode, res.body).toBe(202);
  });
});
