import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, RESPONSES_USAGE, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, listen } from '../../helpers/spotlight.js';

const UPSTREAM_KEY = 'sk-upstream-secret-key-responses';
// gpt-4.1: 2 / 8 USD per million tokens, no cache price of its own (cached input costs input).
const COST_USD = (11 * 2 + 7 * 8) / 1e6;

describe.each(DATABASES)('the Responses API through the proxy with the openai client on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;

  const record = (user: TestUser, id: string) =>
    call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token }).then((r) => r.json());
  const setup = async () => {
    const user = await createUser(t);
    const credential = await createCredential(t, user, {
      name: 'fake',
      base_url: upstream.baseUrl,
      api_key: UPSTREAM_KEY,
    });
    const client = new OpenAI({ baseURL: `${base}/spotlight/v1`, apiKey: user.key, maxRetries: 0 });
    return { user, credential, client };
  };

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, proxyTimeoutMs: 1500 } });
    base = await listen(t);
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('answers responses.create, sends the body to {base_url}/responses with only model changed, and records it', async () => {
    const { user, credential, client } = await setup();
    const { data, response } = await client.responses
      .create({ model: 'fake/gpt-4.1', input: 'Say hello', max_output_tokens: 50, metadata: { a: 'b' } })
      .withResponse();
    expect(data.output_text).toBe('Hello there');
    const seen = upstream.seen.at(-1);
    expect(seen?.path).toBe('/responses');
    expect(seen?.body).toEqual({ model: 'gpt-4.1', input: 'Say hello', max_output_tokens: 50, metadata: { a: 'b' } });
    expect(seen?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(seen?.headers)).not.toContain(user.key);
    const id = response.headers.get('x-taskhook-call-id') ?? '';
    expect(await record(user, id)).toMatchObject({
      api: 'responses',
      model: 'fake/gpt-4.1',
      upstream_model: 'gpt-4.1',
      response_model: 'gpt-4.1-2025-04-14',
      provider_credential_uuid: credential.uuid,
      stream: false,
      status_code: 200,
      error: null,
      input_tokens: RESPONSES_USAGE.input_tokens,
      output_tokens: RESPONSES_USAGE.output_tokens,
      cache_read_tokens: 4,
      cache_write_tokens: null,
      cost_usd: COST_USD,
      usage_estimated: false,
    });
    const usage = (await call(t.app, 'GET', '/spotlight/usage?api=responses', { token: user.token })).json();
    expect(usage.usage).toEqual([expect.objectContaining({ api: 'responses', calls: 1, cache_read_tokens: 4 })]);
  });

  it('relays a stream event by event with its event: lines, and records the usage of the terminal event', async () => {
    const { user, client } = await setup();
    const { data: stream, response } = await client.responses
      .create({ model: 'fake/gpt-4.1', input: [{ role: 'user', content: 'Say hello' }], stream: true })
      .withResponse();
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(types).toEqual([
      'response.created',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.completed',
    ]);
    expect(text).toBe('Hello there');
    const raw = await fetch(`${base}/spotlight/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/gpt-4.1', input: 'hi', stream: true }),
    });
    const body = await raw.text();
    expect(body).toContain('event: response.created\ndata: {');
    expect(body.trimEnd().split('\n\n').at(-1)).toMatch(/^event: response.completed\n/);
    expect(body).not.toContain('[DONE]');
    const rec = await record(user, response.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({
      api: 'responses',
      stream: true,
      status_code: 200,
      error: null,
      response_model: 'gpt-4.1-2025-04-14',
      input_tokens: 11,
      output_tokens: 7,
      cache_read_tokens: 4,
      cost_usd: COST_USD,
    });
    expect(rec.time_to_first_token_ms).toEqual(expect.any(Number));
  });

  it('records a failed response as upstream_error, and ends a stream cut short with an error event', async () => {
    const { user, client } = await setup();
    const { response } = await client.responses.create({ model: 'fake/failed', input: 'x' }).withResponse();
    expect(await record(user, response.headers.get('x-taskhook-call-id') ?? '')).toMatchObject({
      status_code: 200,
      error: { code: 'upstream_error', message: 'the model failed' },
    });
    const failed = await fetch(`${base}/spotlight/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/failed', input: 'x', stream: true }),
    });
    expect((await failed.text()).trimEnd().split('\n\n').at(-1)).toMatch(/^event: response.failed\n/);
    expect(await record(user, failed.headers.get('x-taskhook-call-id') ?? '')).toMatchObject({
      error: { code: 'upstream_error', message: 'the model failed' },
      input_tokens: 11,
    });

    const cut = await fetch(`${base}/spotlight/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake/cut', input: 'x', stream: true }),
    });
    const last = (await cut.text()).trimEnd().split('\n\n').at(-1) ?? '';
    expect(last.split('\n')[0]).toBe('event: error');
    expect(JSON.parse(last.split('\n')[1]?.slice(6) ?? '')).toEqual({
      type: 'error',
      code: 'upstream_error',
      message: 'Upstream ended the stream before its final event',
      param: null,
      sequence_number: 2,
    });
    expect(await record(user, cut.headers.get('x-taskhook-call-id') ?? '')).toMatchObject({
      status_code: 200,
      error: { code: 'upstream_error' },
      usage_estimated: true,
    });
  });

  it("refuses background, a bad input and unknown paths in OpenAI's shape, with nothing upstream", async () => {
    const { user } = await setup();
    const before = upstream.seen.length;
    const post = (body: unknown, path = '/spotlight/v1/responses') =>
      call(t.app, 'POST', path, { token: user.key, body });
    const background = await post({ model: 'fake/gpt-4.1', input: 'x', background: true });
    expect(background.statusCode).toBe(400);
    expect(background.json()).toEqual({
      error: expect.objectContaining({
        type: 'invalid_request_error',
        code: 'unsupported_parameter',
        param: 'background',
      }),
    });
    expect((await post({ model: 'fake/gpt-4.1', input: 3 })).json().error.param).toBe('input');
    expect((await post({ input: 'x' })).json().error.param).toBe('model');
    const retrieve = await call(t.app, 'GET', '/spotlight/v1/responses/resp_fake', { token: user.key });
    expect(retrieve.statusCode).toBe(404);
    expect(retrieve.json().error.type).toBe('invalid_request_error');
    expect(upstream.seen.length).toBe(before);
  });

  it('caches by kind, bypasses calls on upstream state, and keeps budgets and routes as chat completions', async () => {
    const { user, credential } = await setup();
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      call(t.app, 'POST', `/spotlight/v1/${path}`, { token: user.key, body, headers });
    const cached = { 'x-taskhook-cache': 'max-age=60' };
    // One body both endpoints accept: a chat-completions entry never answers a Responses call.
    const both = { model: 'fake/gpt-4.1', input: 'x', messages: [{ role: 'user', content: 'x' }] };
    expect((await post('chat/completions', both, cached)).headers['x-taskhook-cache']).toBe('miss');
    expect((await post('responses', both, cached)).headers['x-taskhook-cache']).toBe('miss');
    const hit = await post('responses', both, cached);
    expect(hit.headers['x-taskhook-cache']).toBe('hit');
    expect(hit.json().output[0].content[0].text).toBe('Hello there');
    expect((await record(user, String(hit.headers['x-taskhook-call-id']))).api).toBe('responses');
    const stateful = { model: 'fake/gpt-4.1', input: 'x', previous_response_id: 'resp_1' };
    for (let i = 0; i < 2; i++)
      expect((await post('responses', stateful, cached)).headers['x-taskhook-cache']).toBe('bypass');

    const route = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: {
        name: 'resp',
        targets: [
          { provider_credential_uuid: credential.uuid, model: 'rate-limited' },
          { provider_credential_uuid: credential.uuid, model: 'gpt-4.1' },
        ],
      },
    });
    expect(route.statusCode).toBe(201);
    const routed = await post('responses', { model: 'route:resp', input: 'x' });
    expect(routed.statusCode).toBe(200);
    const rec = await record(user, String(routed.headers['x-taskhook-call-id']));
    expect(rec).toMatchObject({ api: 'responses', model: 'route:resp', upstream_model: 'gpt-4.1' });
    expect(rec.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([429, 200]);

    await call(t.app, 'PATCH', '/spotlight/budgets/account', { token: user.token, body: { monthly_usd: 0 } });
    const refused = await post('responses', { model: 'fake/gpt-4.1', input: 'y' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('budget_exceeded');
    expect(await record(user, String(refused.headers['x-taskhook-call-id']))).toMatchObject({
      api: 'responses',
      error: { code: 'budget_exceeded' },
    });
  });
});
