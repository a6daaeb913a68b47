import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, listen } from '../../helpers/spotlight.js';

const messages = [{ role: 'user', content: 'Say hello' }];

describe.each(DATABASES)('the response cache through the proxy on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let user: TestUser;
  let fake: { uuid: string; name: string };

  const record = (who: TestUser, id: string | null) =>
    call(t.app, 'GET', `/spotlight/calls/${id}`, { token: who.token }).then((r) => r.json());
  const chat = (body: Record<string, unknown> | string, headers: Record<string, string> = {}, who = user) =>
    fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  /** How many chat completions reached the upstream so far. */
  const upstreamCalls = () => upstream.seen.filter((s) => s.path === '/chat/completions').length;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, proxyTimeoutMs: 1000 } });
    base = await listen(t);
    user = await createUser(t);
    fake = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('refuses a malformed X-Taskhook-Cache with 400 invalid_cache_header, unrecorded and not sent upstream', async () => {
    const before = upstreamCalls();
    for (const value of ['max-age=0', 'max-age=86401', 'max-age=1.5', 'public', 'no-cache', 'max-age=']) {
      const res = await chat({ model: 'fake/gpt-4o', messages }, { 'x-taskhook-cache': value });
      expect(res.status, value).toBe(400);
      expect(((await res.json()) as { error: unknown }).error).toEqual({
        message: expect.any(String),
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_cache_header',
      });
      expect(res.headers.get('x-taskhook-call-id')).toBeNull();
    }
    expect(upstreamCalls()).toBe(before);
    const ok = await chat({ model: 'fake/gpt-4o', messages, seed: 1 }, { 'x-taskhook-cache': '  max-age=60 ' });
    expect(ok.status).toBe(200);
    expect(upstream.seen.at(-1)?.headers['x-taskhook-cache']).toBeUndefined();
  });

  it('answers an identical request from the cache byte for byte, whatever the key order or user', async () => {
    const first = await chat(
      { model: 'fake/gpt-4o', messages, temperature: 0.5 },
      { 'x-taskhook-cache': 'max-age=300' },
    );
    expect(first.headers.get('x-taskhook-cache')).toBe('miss');
    const firstBody = await first.text();
    const before = upstreamCalls();
    // The same request, spelled differently: keys reordered, 0.5 as 5e-1, another `user`.
    const again = await chat(
      `{"temperature":5e-1,"messages":[{"content":"Say hello","role":"user"}],"user":"someone","model":"fake/gpt-4o"}`,
      { 'x-taskhook-cache': 'max-age=60' },
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('x-taskhook-cache')).toBe('hit');
    expect(Number(again.headers.get('age'))).toBeGreaterThanOrEqual(0);
    expect(again.headers.get('content-type')).toContain('application/json');
    expect(await again.text()).toBe(firstBody);
    expect(upstreamCalls()).toBe(before);
    const rec = await record(user, again.headers.get('x-taskhook-call-id'));
    expect(rec).toMatchObject({
      cache_hit: true,
      attempts: [],
      status_code: 200,
      error: null,
      input_tokens: null,
      output_tokens: null,
      cost_usd: 0,
      time_to_first_token_ms: null,
      provider_credential_uuid: fake.uuid,
      upstream_model: 'gpt-4o',
      response_model: 'gpt-4o-2024-07-18',
    });

    // A different sampling parameter is another request; no header neither reads nor marks.
    const other = await chat(
      { model: 'fake/gpt-4o', messages, temperature: 0.7 },
      { 'x-taskhook-cache': 'max-age=60' },
    );
    expect(other.headers.get('x-taskhook-cache')).toBe('miss');
    const plain = await chat({ model: 'fake/gpt-4o', messages, temperature: 0.5 });
    expect(plain.headers.get('x-taskhook-cache')).toBeNull();
    expect(upstreamCalls()).toBe(before + 2);
    const usage = await call(t.app, 'GET', '/spotlight/usage', { token: user.token });
    expect(usage.json().totals.cache_hits).toBe(1);
  });

  it('replays a stream event by event, with the usage chunk only for a caller that asked for it', async () => {
    const client = (headers: Record<string, string>) =>
      new OpenAI({ baseURL: `${base}/spotlight/v1`, apiKey: user.key, maxRetries: 0, defaultHeaders: headers });
    const read = async (includeUsage: boolean) => {
      const { data: stream, response } = await client({ 'x-taskhook-cache': 'max-age=120' })
        .chat.completions.create({
          model: 'fake/gpt-4o-mini',
          messages: [{ role: 'user', content: 'stream me' }],
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        })
        .withResponse();
      let text = '';
      let usage = false;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = true;
      }
      return { text, usage, cache: response.headers.get('x-taskhook-cache') };
    };
    const before = upstreamCalls();
    expect(await read(false)).toEqual({ text: 'Hello there', usage: false, cache: 'miss' });
    // stream_options is not part of the key: the stored stream answers both callers.
    expect(await read(true)).toEqual({ text: 'Hello there', usage: true, cache: 'hit' });
    expect(await read(false)).toEqual({ text: 'Hello there', usage: false, cache: 'hit' });
    expect(upstreamCalls()).toBe(before + 1);
    // A streamed and a non-streamed request never share an entry.
    const whole = await chat(
      { model: 'fake/gpt-4o-mini', messages: [{ role: 'user', content: 'stream me' }] },
      { 'x-taskhook-cache': 'max-age=120' },
    );
    expect(whole.headers.get('x-taskhook-cache')).toBe('miss');
  });

  it('never stores an error or a broken stream, and keeps accounts apart', async () => {
    for (let i = 0; i < 2; i++) {
      const broken = await chat({ model: 'fake/broken', messages }, { 'x-taskhook-cache': 'max-age=60' });
      expect(broken.status).toBe(500);
      expect(broken.headers.get('x-taskhook-cache')).toBe('miss');
      const reset = await chat({ model: 'fake/reset', messages, stream: true }, { 'x-taskhook-cache': 'max-age=60' });
      await reset.text();
      expect(reset.headers.get('x-taskhook-cache')).toBe('miss');
    }
    const body = { model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'mine' }] };
    expect((await chat(body, { 'x-taskhook-cache': 'max-age=60' })).headers.get('x-taskhook-cache')).toBe('miss');
    expect((await chat(body, { 'x-taskhook-cache': 'max-age=60' })).headers.get('x-taskhook-cache')).toBe('hit');
    const other = await createUser(t);
    await createCredential(t, other, { name: 'fake', base_url: upstream.baseUrl });
    const theirs = await chat(body, { 'x-taskhook-cache': 'max-age=60' }, other);
    expect(theirs.headers.get('x-taskhook-cache')).toBe('miss');
  });

  it('never stores a stream that carried an error event, and replays a stream with the Content-Type it had', async () => {
    for (let i = 0; i < 2; i++) {
      const inband = await chat({ model: 'fake/inband', messages, stream: true }, { 'x-taskhook-cache': 'max-age=60' });
      expect(await inband.text()).toContain('provider overloaded');
      expect(inband.headers.get('x-taskhook-cache')).toBe('miss');
    }
    const body = { model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'typed' }], stream: true };
    const miss = await chat(body, { 'x-taskhook-cache': 'max-age=60' });
    await miss.text();
    const hit = await chat(body, { 'x-taskhook-cache': 'max-age=60' });
    await hit.text();
    expect(hit.headers.get('x-taskhook-cache')).toBe('hit');
    expect(hit.headers.get('content-type')).toBe(miss.headers.get('content-type'));
  });

  it('makes entries unreachable when the credential changes', async () => {
    const body = { model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'edit me' }] };
    expect((await chat(body, { 'x-taskhook-cache': 'max-age=60' })).headers.get('x-taskhook-cache')).toBe('miss');
    const edit = await call(t.app, 'PATCH', `/user/provider_credentials/${fake.uuid}`, {
      token: user.token,
      body: { api_key: 'sk-test-upstream-key-1111' },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    expect((await chat(body, { 'x-taskhook-cache': 'max-age=60' })).headers.get('x-taskhook-cache')).toBe('miss');
  });

  it("uses a route's cache_ttl_seconds unless the caller says no-store, and answers a hit past a reached budget", async () => {
    const owner = await createUser(t);
    const cred = await createCredential(t, owner, { name: 'fake', base_url: upstream.baseUrl });
    const created = await call(t.app, 'POST', '/spotlight/routes', {
      token: owner.token,
      body: {
        name: 'cached',
        targets: [{ provider_credential_uuid: cred.uuid, model: 'gpt-4o' }],
        cache_ttl_seconds: 600,
      },
    });
    expect(created.statusCode).toBe(201);
    const body = { model: 'route:cached', messages };
    expect((await chat(body, {}, owner)).headers.get('x-taskhook-cache')).toBe('miss');
    const hit = await chat(body, {}, owner);
    expect(hit.headers.get('x-taskhook-cache')).toBe('hit');
    expect(await record(owner, hit.headers.get('x-taskhook-call-id'))).toMatchObject({
      cache_hit: true,
      model: 'route:cached',
      route: { uuid: created.json().uuid, name: 'cached' },
      provider_credential_uuid: cred.uuid,
    });
    // A hit of an answer that came from a fallback target names that target, and editing the
    // route makes its entries unreachable.
    const down = await createCredential(t, owner, { name: 'down', base_url: 'http://127.0.0.1:9/v1' });
    const fallback = await call(t.app, 'POST', '/spotlight/routes', {
      token: owner.token,
      body: {
        name: 'fallback',
        targets: [
          { provider_credential_uuid: down.uuid, model: 'gpt-4o' },
          { provider_credential_uuid: cred.uuid, model: 'gpt-4o-mini' },
        ],
        cache_ttl_seconds: 600,
      },
    });
    const viaFallback = { model: 'route:fallback', messages };
    expect((await chat(viaFallback, {}, owner)).headers.get('x-taskhook-cache')).toBe('miss');
    const fromSecond = await chat(viaFallback, {}, owner);
    expect(fromSecond.headers.get('x-taskhook-cache')).toBe('hit');
    expect(await record(owner, fromSecond.headers.get('x-taskhook-call-id'))).toMatchObject({
      provider_credential_uuid: cred.uuid,
      upstream_model: 'gpt-4o-mini',
      attempts: [],
    });
    const renamed = await call(t.app, 'PATCH', `/spotlight/routes/${fallback.json().uuid}`, {
      token: owner.token,
      body: { retry_on: ['connection'] },
    });
    expect(renamed.statusCode).toBe(200);
    expect((await chat(viaFallback, {}, owner)).headers.get('x-taskhook-cache')).toBe('miss');

    const noStore = await chat(body, { 'x-taskhook-cache': 'no-store' }, owner);
    expect(noStore.headers.get('x-taskhook-cache')).toBeNull();

    await call(t.app, 'PATCH', '/spotlight/budgets/account', { token: owner.token, body: { monthly_usd: 0 } });
    expect((await chat(body, {}, owner)).headers.get('x-taskhook-cache')).toBe('hit');
    const refused = await chat({ ...body, temperature: 1 }, {}, owner);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-taskhook-cache')).toBe('miss');
  });

  it('marks a hit on its span, without token usage', async () => {
    const traceId = 'ab'.repeat(16);
    const headers = { 'x-taskhook-cache': 'max-age=60', traceparent: `00-${traceId}-${'cd'.repeat(8)}-01` };
    const body = { model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'span me' }] };
    await chat(body, { 'x-taskhook-cache': 'max-age=60' });
    expect((await chat(body, headers)).headers.get('x-taskhook-cache')).toBe('hit');
    await t.app.telemetry.tracer.flush();
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
    const [span] = res.json().spans;
    expect(span.attributes['taskhook.spotlight.cache_hit']).toBe(true);
    expect(span.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  });
});
