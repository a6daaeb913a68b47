import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonHasNul } from '../../src/lib/json-depth.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { expectErrorEnvelope } from '../helpers/routes.js';
import { createTrigger, deliver } from '../helpers/triggers.js';

/** What the OpenAPI fuzzer (test/fuzz) found, each fixed where it lives; kept here so it stays fixed. */
describe('jsonHasNul', () => {
  it('finds an escaped NUL in a string or key, not an escaped backslash before "u0000"', () => {
    expect(jsonHasNul('{"a":"x\\u0000y"}')).toBe(true);
    expect(jsonHasNul('{"\\u0000":1}')).toBe(true);
    expect(jsonHasNul('{"a":"\\\\\\u0000"}')).toBe(true);
    expect(jsonHasNul('{"a":"\\\\u0000"}')).toBe(false);
    expect(jsonHasNul('{"a":"u0000"}')).toBe(false);
  });
});

describe.each(DATABASES)('hostile input the fuzzer found, on $name', (database) => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
  });
  afterAll(() => t.close());

  it('a 2,000-character path id is 400 INVALID_REQUEST in the envelope (was 414 in Fastify’s body)', async () => {
    const res = await call(t.app, 'GET', `/agent/${'x'.repeat(2_000)}`, { token: user.token });
    expectErrorEnvelope(res, 400, 'INVALID_REQUEST');
  });

  it('a path that does not decode is 400 in the envelope, with the standard headers', async () => {
    const res = await call(t.app, 'GET', '/agent/%E0%A4%A', { token: user.token });
    expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'path');
  });

  it('a NUL character in a JSON body is 400 on both databases (PostgreSQL cannot store it; was 500)', async () => {
    const res = await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: '{"name":"a\\u0000"}' });
    // In a name, the refusal names the field (names refuse every control character).
    expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'name');
    const elsewhere = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: '{"name":"a","description":"\\u0000"}',
    });
    expectErrorEnvelope(elsewhere, 400, 'INVALID_REQUEST', 'body');
    const agent = await createAgent(t, user);
    const trigger = await createTrigger(t, user, agent.uuid, { message_template: '{{payload.a}}' });
    const delivered = await deliver(t, trigger.uuid, { body: '{"a":"\\u0000"}', secret: trigger.webhook_secret });
    expectErrorEnvelope(delivered, 400, 'INVALID_REQUEST', 'body');
  });

  it('the model proxy refuses a body nested too deep in OpenAI’s shape (was 500)', async () => {
    const res = await call(t.app, 'POST', '/spotlight/v1/chat/completions', {
      token: user.token,
      body: `${'['.repeat(1_000)}${']'.repeat(1_000)}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'body' } });
  });
});
