import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi, USAGE } from '../../helpers/fake-openai.js';
import { createCredential, eventually, listen } from '../../helpers/spotlight.js';

const UPSTREAM_KEY = 'sk-upstream-secret-key-abcdefgh';
const messages = [{ role: 'user' as const, content: 'Say hello' }];

describe.each(DATABASES)('model proxy with the openai client on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let user: TestUser;
  let credential: { uuid: string; name: string };
  let client: OpenAI;

  const record = (id: string) =>
    call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token }).then((r) => r.json());

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, proxyTimeoutMs: 1500 } });
    base = await listen(t);
    user = await createUser(t);
    credential = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl, api_key: UPSTREAM_KEY });
    client = new OpenAI({ baseURL: `${base}/spotlight/v1`, apiKey: user.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('answers a plain call, sends only the provider key upstream, and records it', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'fake/gpt-4o-mini', messages, temperature: 0.2, user: 'end-user-7' })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('Hello there');
    expect(data.usage).toMatchObject(USAGE);
    const seen = upstream.seen.at(-1);
    expect(seen?.body).toMatchObject({ model: 'gpt-4o-mini', messages, temperature: 0.2, user: 'end-user-7' });
    expect(seen?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(seen?.headers)).not.toContain(user.key);
    expect(seen?.headers['x-api-key']).toBeUndefined();

    const id = response.headers.get('x-taskhook-call-id') ?? '';
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(response.headers.get('x-ratelimit-limit')).toBeTruthy();
    expect(await record(id)).toMatchObject({
      id,
      source: 'api',
      model: 'fake/gpt-4o-mini',
      upstream_model: 'gpt-4o-mini',
      response_model: 'gpt-4o-mini-2024-07-18',
      provider_credential_uuid: credential.uuid,
      provider_credential_name: 'fake',
      stream: false,
      status_code: 200,
      error: null,
      time_to_first_token_ms: null,
      input_tokens: 11,
      output_tokens: 7,
      // gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
      cost_usd: (11 * 0.15 + 7 * 0.6) / 1e6,
      agent_uuid: null,
      task_id: null,
    });
  });

  it('records each call as a GenAI span in the telemetry store, in the trace its traceparent names', async () => {
    const traceId = randomUUID().replaceAll('-', '');
    const parentSpanId = traceId.slice(0, 16);
    await client.chat.completions.create(
      { model: 'fake/gpt-4o-mini', messages },
      { headers: { traceparent: `00-${traceId}-${parentSpanId}-01` } },
    );
    await t.app.telemetry.tracer.flush();
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
    expect(res.statusCode).toBe(200);
    const [span] = res.json().spans;
    expect(span).toMatchObject({ name: 'chat gpt-4o-mini', parent_span_id: parentSpanId });
    expect(span.attributes).toMatchObject({
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 7,
    });
  });

  it('relays a stream chunk by chunk: the first chunk arrives while upstream still holds the rest', async () => {
    upstream.resetGate();
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'fake/gated', messages, stream: true })
      .withResponse();
    let text = '';
    let released = false;
    let usageSeen = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usageSeen = true;
      if (text === 'Hello' && !released) {
        // Upstream is blocked on the gate: this chunk cannot have been buffered to the end.
        released = true;
        upstream.release();
      }
    }
    expect({ text, released, usageSeen }).toEqual({ text: 'Hello there', released: true, usageSeen: false });
    expect(upstream.seen.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const id = response.headers.get('x-taskhook-call-id') ?? '';
    const rec = await record(id);
    expect(rec).toMatchObject({ stream: true, status_code: 200, error: null, input_tokens: 11, output_tokens: 7 });
    expect(rec.response_model).toBe('gated-2024-07-18');
    expect(rec.time_to_first_token_ms).toEqual(expect.any(Number));
  });

  it('relays the usage chunk to a caller that asked for it, keeping its other stream options', async () => {
    const stream = await client.chat.completions.create({
      model: 'fake/gpt-4o',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const usages = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([USAGE]);
  });

  it('selects the credential by X-Taskhook-Credential (name or uuid), model unchanged', async () => {
    for (const ref of ['fake', credential.uuid]) {
      const res = await client.chat.completions.create(
        { model: 'gpt-4o', messages },
        { headers: { 'X-Taskhook-Credential': ref } },
      );
      expect(res.choices[0]?.message.content).toBe('Hello there');
      expect(upstream.seen.at(-1)?.body?.model).toBe('gpt-4o');
    }
    // A model that itself contains "/" keeps everything after the first one.
    await client.chat.completions.create({ model: 'fake/meta-llama/Llama-3-8b', messages });
    expect(upstream.seen.at(-1)?.body?.model).toBe('meta-llama/Llama-3-8b');
  });

  it("answers unknown credentials and models 404 in OpenAI's shape", async () => {
    const refusals = [
      [{ model: 'gpt-4o', messages }, { 'X-Taskhook-Credential': 'nope' }, 'credential_not_found'],
      [{ model: 'gpt-4o', messages }, {}, 'model_not_found'],
      [{ model: 'nope/gpt-4o', messages }, {}, 'model_not_found'],
    ] as const;
    for (const [body, headers, code] of refusals) {
      const err = await client.chat.completions.create(body, { headers }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect({
        status: (err as InstanceType<typeof OpenAI.APIError>).status,
        code: (err as InstanceType<typeof OpenAI.APIError>).code,
      }).toEqual({ status: 404, code });
    }
  });

  it('relays upstream errors with their status, body and Retry-After, and records them', async () => {
    const err = (await client.chat.completions
      .create({ model: 'fake/rate-limited', messages })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.message).toContain('Rate limit reached for requests');
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.headers?.get('retry-after')).toBe('7');
    expect(err.headers?.get('x-upstream-secret-header')).toBeNull();
    const id = err.headers?.get('x-taskhook-call-id') ?? '';
    expect(await record(id)).toMatchObject({
      status_code: 429,
      error: { code: 'upstream_error', message: 'Rate limit reached for requests' },
      input_tokens: null,
      cost_usd: null,
    });

    const raw = await fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/broken', messages }),
    });
    expect(raw.status).toBe(500);
    expect(await raw.json()).toEqual({
      error: {
        message: 'upstream answered HTTP 500: boom: the model server fell over',
        type: 'upstream_error',
        param: null,
        code: 'upstream_error',
      },
    });
  });

  it('answers 502 when the upstream cannot be reached and 504 when it does not answer in time', async () => {
    const dead = await createCredential(t, user, {
      name: `dead-${randomUUID().slice(0, 8)}`,
      base_url: 'http://127.0.0.1:1/v1',
    });
    const unreachable = (await client.chat.completions
      .create({ model: `${dead.name}/x`, messages })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect({ status: unreachable.status, code: unreachable.code, type: unreachable.type }).toEqual({
      status: 502,
      code: 'upstream_unreachable',
      type: 'upstream_error',
    });
    // One sentence, said once ("Upstream the upstream could not be reached" before).
    expect(unreachable.error).toMatchObject({
      message: expect.stringMatching(/^The upstream could not be reached \(/),
    });
    const slow = (await client.chat.completions
      .create({ model: 'fake/hang', messages })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect({ status: slow.status, code: slow.code }).toEqual({ status: 504, code: 'upstream_timeout' });
    const id = slow.headers?.get('x-taskhook-call-id') ?? '';
    expect((await record(id)).error).toMatchObject({ code: 'upstream_timeout' });
  });

  it('ends a stream that breaks after it started with one error event and no [DONE]', async () => {
    for (const [model, code] of [
      ['fake/stall', 'upstream_timeout'],
      ['fake/reset', 'upstream_error'],
    ] as const) {
      const res = await fetch(`${base}/spotlight/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-service-api-key': user.key, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages, stream: true }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const text = await res.text();
      expect(text).toContain('"content":"Hello"');
      expect(text).not.toContain('[DONE]');
      const last = text.trim().split('\n\n').at(-1) ?? '';
      expect(JSON.parse(last.replace(/^data: /, ''))).toMatchObject({
        error: { type: 'upstream_error', param: null, code },
      });
      const rec = await record(res.headers.get('x-taskhook-call-id') ?? '');
      expect(rec).toMatchObject({ status_code: 200, stream: true, error: { code } });
    }
  });

  it('aborts the upstream request when the caller disconnects, and records client_closed', async () => {
    const closedBefore = upstream.state.closed;
    const hangs = () => upstream.seen.filter((s) => s.body?.model === 'hang').length;
    const hangsBefore = hangs();
    const controller = new AbortController();
    const pending = fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': user.key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/hang', messages }),
      signal: controller.signal,
    }).catch(() => null);
    // Upstream holds the request; the caller then hangs up.
    await eventually(async () => (hangs() > hangsBefore ? true : undefined));
    controller.abort();
    await pending;
    await eventually(async () => (upstream.state.closed > closedBefore ? true : undefined));
    const closed = await eventually(async () => {
      const list = (await call(t.app, 'GET', '/spotlight/calls?limit=100', { token: user.token })).json().calls;
      return list.find((c: { error: { code: string } | null }) => c.error?.code === 'client_closed');
    });
    expect(closed).toMatchObject({ status_code: 499, upstream_model: 'hang', stream: false });
  });

  it('lists models: the union with prefixed ids, or one upstream as it is', async () => {
    await createCredential(t, user, { name: 'badkey', base_url: upstream.baseUrl, api_key: 'bad-key' });
    await createCredential(t, user, { name: 'slowkey', base_url: upstream.baseUrl, api_key: 'slow-key' });
    const all = await client.models.list();
    const ids = all.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['fake/gpt-4o-mini', 'fake/gpt-4o']));
    expect(ids.filter((id) => id.startsWith('badkey/') || id.startsWith('slowkey/'))).toEqual([]);
    const one = await fetch(`${base}/spotlight/v1/models`, {
      headers: { authorization: `Bearer ${user.key}`, 'x-taskhook-credential': 'fake' },
    });
    expect(((await one.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([
      'gpt-4o-mini',
      'gpt-4o',
    ]);
  });
});
