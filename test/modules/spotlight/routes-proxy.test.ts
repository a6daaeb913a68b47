import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, listen } from '../../helpers/spotlight.js';

const messages = [{ role: 'user' as const, content: 'Say hello' }];
// gpt-4o-mini: $0.15 in, $0.60 out per million tokens; the fake answers 11 in, 7 out.
const MINI_COST = (11 * 0.15 + 7 * 0.6) / 1e6;

describe.each(DATABASES)('calling a fallback route through the proxy on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let user: TestUser;
  let fake: { uuid: string; name: string };
  let down: { uuid: string; name: string };
  let client: OpenAI;

  const record = (id: string) =>
    call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token }).then((r) => r.json());
  const createRoute = async (name: string, targets: Array<[string, string]>, extra: Record<string, unknown> = {}) => {
    const res = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: {
        name,
        targets: targets.map(([uuid, model]) => ({ provider_credential_uuid: uuid, model })),
        ...extra,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { uuid: string; name: string; created_at: string };
  };
  const chat = (model: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model, messages, ...body }),
    });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, proxyTimeoutMs: 1000 } });
    base = await listen(t);
    user = await createUser(t);
    fake = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    // Nothing listens on port 9 of loopback: the connection is refused.
    down = await createCredential(t, user, { name: 'down', base_url: 'http://127.0.0.1:9/v1' });
    client = new OpenAI({ baseURL: `${base}/spotlight/v1`, apiKey: user.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('falls over from an upstream answering 500 to the next target; the stock client never sees it', async () => {
    const route = await createRoute('main', [
      [fake.uuid, 'broken'],
      [fake.uuid, 'gpt-4o-mini'],
    ]);
    const { data, response } = await client.chat.completions
      .create({ model: 'route:main', messages }, { headers: { 'x-taskhook-credential': down.uuid } })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Hello there');
    // The route wins over X-Taskhook-Credential, which is ignored.
    expect(upstream.seen.slice(-2).map((s) => s.body?.model)).toEqual(['broken', 'gpt-4o-mini']);
    const rec = await record(response.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({
      model: 'route:main',
      upstream_model: 'gpt-4o-mini',
      provider_credential_uuid: fake.uuid,
      provider_credential_name: 'fake',
      route: { uuid: route.uuid, name: 'main' },
      status_code: 200,
      error: null,
      input_tokens: 11,
      output_tokens: 7,
      cost_usd: MINI_COST,
      cache_hit: false,
    });
    expect(rec.attempts).toEqual([
      {
        provider_credential_uuid: fake.uuid,
        upstream_model: 'broken',
        status_code: 500,
        error: { code: 'upstream_error', message: expect.stringContaining('boom') },
        latency_ms: expect.any(Number),
      },
      {
        provider_credential_uuid: fake.uuid,
        upstream_model: 'gpt-4o-mini',
        status_code: 200,
        error: null,
        latency_ms: expect.any(Number),
      },
    ]);
    const listed = await call(t.app, 'GET', `/spotlight/calls?route_uuid=${route.uuid}`, { token: user.token });
    expect(listed.json().calls.map((c: { id: string }) => c.id)).toEqual([rec.id]);
    const bad = await call(t.app, 'GET', '/spotlight/calls?route_uuid=nope', { token: user.token });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('INVALID_REQUEST');
  });

  it('falls back on an unreachable upstream and on a timeout, with no status for either', async () => {
    await createRoute('sturdy', [
      [down.uuid, 'gpt-4o'],
      [fake.uuid, 'hang'],
      [fake.uuid, 'gpt-4o'],
    ]);
    const res = await chat('route:sturdy');
    expect(res.status).toBe(200);
    const rec = await record(res.headers.get('x-taskhook-call-id') ?? '');
    expect(
      rec.attempts.map((a: { status_code: unknown; error: { code: string } | null }) => [
        a.status_code,
        a.error?.code ?? null,
      ]),
    ).toEqual([
      [null, 'upstream_unreachable'],
      [null, 'upstream_timeout'],
      [200, null],
    ]);
    expect(rec.attempts[0].error.message).toMatch(/^The upstream could not be reached \(/);
    expect(rec.attempts[1].error.message).toBe('The upstream did not answer in time');
    expect(rec.upstream_model).toBe('gpt-4o');
  });

  it('relays a failure not in retry_on as it is, and the last target failure when all fail', async () => {
    await createRoute(
      'only429',
      [
        [fake.uuid, 'broken'],
        [fake.uuid, 'gpt-4o'],
      ],
      { retry_on: ['429'] },
    );
    const kept = await chat('route:only429');
    expect(kept.status).toBe(500);
    expect((await record(kept.headers.get('x-taskhook-call-id') ?? '')).attempts).toHaveLength(1);

    await createRoute('allfail', [
      [fake.uuid, 'broken'],
      [fake.uuid, 'rate-limited'],
    ]);
    const last = await chat('route:allfail');
    expect(last.status).toBe(429);
    expect(last.headers.get('retry-after')).toBe('7');
    expect(((await last.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
    const rec = await record(last.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({ status_code: 429, upstream_model: 'rate-limited', cost_usd: null });
    expect(rec.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 429]);
  });

  it('starts a stream only once an attempt answered 2xx, and never retries a stream that broke', async () => {
    await createRoute('streams', [
      [fake.uuid, 'rate-limited'],
      [fake.uuid, 'gpt-4o'],
    ]);
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'route:streams', messages, stream: true })
      .withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello there');
    const rec = await record(response.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({ stream: true, upstream_model: 'gpt-4o', status_code: 200, input_tokens: 11 });
    expect(rec.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([429, 200]);

    await createRoute('broken-stream', [
      [fake.uuid, 'reset'],
      [fake.uuid, 'gpt-4o'],
    ]);
    const before = upstream.seen.length;
    const res = await chat('route:broken-stream', { stream: true });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('"code":"upstream_error"');
    expect(body).not.toContain('[DONE]');
    expect(upstream.seen.length - before).toBe(1);
    const broken = await record(res.headers.get('x-taskhook-call-id') ?? '');
    expect(broken.attempts).toHaveLength(1);
    expect(broken.error?.code).toBe('upstream_error');
  });

  it('answers an unknown route 404 route_not_found without a record, and lists routes as models', async () => {
    const res = await chat('route:nowhere');
    expect(res.status).toBe(404);
    expect(res.headers.get('x-taskhook-call-id')).toBeNull();
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'route_not_found',
    });

    const models = await client.models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids.slice(0, 2)).toEqual(expect.arrayContaining(['fake/gpt-4o-mini', 'fake/gpt-4o']));
    const route = models.data.find((m) => m.id === 'route:main');
    expect(route).toMatchObject({ object: 'model', owned_by: 'taskhook', created: expect.any(Number) });
    expect(ids.indexOf('route:main')).toBeGreaterThan(ids.indexOf('fake/gpt-4o'));
  });

  it('checks budgets once, before the first target, and records no attempt when refused', async () => {
    const other = await createUser(t);
    const cred = await createCredential(t, other, { name: 'fake', base_url: upstream.baseUrl });
    await call(t.app, 'POST', '/spotlight/routes', {
      token: other.token,
      body: { name: 'r', targets: [{ provider_credential_uuid: cred.uuid, model: 'gpt-4o' }] },
    });
    const limit = await call(t.app, 'PATCH', '/spotlight/budgets/account', {
      token: other.token,
      body: { monthly_usd: 0 },
    });
    expect(limit.statusCode).toBe(200);
    const before = upstream.seen.length;
    const res = await fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'route:r', messages }),
    });
    expect(res.status).toBe(429);
    expect(upstream.seen.length).toBe(before);
    const rec = await call(t.app, 'GET', `/spotlight/calls/${res.headers.get('x-taskhook-call-id')}`, {
      token: other.token,
    });
    expect(rec.json()).toMatchObject({ attempts: [], route: { name: 'r' }, error: { code: 'budget_exceeded' } });
  });
});
