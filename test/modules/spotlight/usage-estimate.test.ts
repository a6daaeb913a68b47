import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, tempDir } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, eventually, listen } from '../../helpers/spotlight.js';

/** 1,000 USD per million input tokens and 2,000 per million output tokens: 1,000 and 2,000 nanos a token. */
const PRICE = { input: 1000, output: 2000 };
const messages = [{ role: 'user', content: 'hi' }];

/** A 2xx answer without usage is charged an estimate: no stream cut short costs nothing. */
describe.each(DATABASES)('usage estimates of answers without usage on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let user: TestUser;

  const record = async (id: string) =>
    (await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token })).json();
  const chat = (body: Record<string, unknown>) =>
    call(t.app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body: { messages, ...body } });
  const callId = (res: { headers: Record<string, unknown> }) => String(res.headers['x-taskhook-call-id']);

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    const prices = path.join(tempDir(), 'prices.json');
    const priced = ['hello-world', 'no-usage', 'reset', 'broken', 'gpt-4o'];
    writeFileSync(prices, JSON.stringify(Object.fromEntries(priced.map((m) => [m, PRICE]))));
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, modelPricesFile: prices } });
    base = await listen(t);
    user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('a stream the caller closes before its usage chunk: 101 in, 3 out, 0.107 USD, committed within 2 s', async () => {
    // A limit the call starts under: once its estimate is committed, the next call is refused.
    await call(t.app, 'PATCH', '/spotlight/budgets/account', { token: user.token, body: { monthly_usd: 0.1 } });
    const controller = new AbortController();
    const res = await fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'fake/hello-world',
        stream: true,
        messages: [{ role: 'user', content: 'x'.repeat(401) }],
      }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-taskhook-call-id') as string;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('world')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    controller.abort();
    // The record is written once the disconnect is seen (no timed bound here: benchmarks measure time).
    const rec = await eventually(async () => {
      const r = await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token });
      return r.statusCode === 200 ? r.json() : undefined;
    }, 5000);
    expect(rec).toMatchObject({
      status_code: 200,
      stream: true,
      input_tokens: 101,
      output_tokens: 3,
      usage_estimated: true,
      error: { code: 'client_closed' },
      cost_usd: 0.107,
    });
    const next = await chat({ model: 'fake/gpt-4o' });
    expect(next.statusCode).toBe(429);
    expect(next.json().error.code).toBe('budget_exceeded');
    await call(t.app, 'PATCH', '/spotlight/budgets/account', { token: user.token, body: { monthly_usd: null } });
  });

  it('answers without usage, streamed or not, and a stream that broke, are estimated from what came', async () => {
    // "hi" → 1 token in; "Hello there" → 3 tokens out.
    const whole = await chat({ model: 'fake/no-usage' });
    expect(whole.statusCode).toBe(200);
    expect(await record(callId(whole))).toMatchObject({
      input_tokens: 1,
      output_tokens: 3,
      usage_estimated: true,
      error: null,
      cost_usd: 0.007,
    });
    const streamed = await chat({ model: 'fake/no-usage', stream: true });
    expect(streamed.body).toContain('data: [DONE]');
    expect(await record(callId(streamed))).toMatchObject({
      input_tokens: 1,
      output_tokens: 3,
      usage_estimated: true,
      error: null,
    });
    // Upstream drops the connection after "Hello": 2 tokens out.
    const broken = await chat({ model: 'fake/reset', stream: true });
    expect(await record(callId(broken))).toMatchObject({
      status_code: 200,
      input_tokens: 1,
      output_tokens: 2,
      usage_estimated: true,
      error: { code: 'upstream_error' },
      cost_usd: 0.005,
    });
  });

  it('counts code points of string contents and text parts only', async () => {
    const res = await chat({
      model: 'fake/no-usage',
      messages: [
        { role: 'system', name: 'ignored-name', content: '😀😀😀😀😀' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'abcd' },
            { type: 'image_url', image_url: { url: 'https://example.com/a-long-url.png' } },
          ],
        },
      ],
      tools: [{ type: 'function', function: { name: 'not-counted', parameters: {} } }],
    });
    // 5 emoji (10 UTF-16 units) + 4 letters = 9 characters → 3 tokens.
    expect(await record(callId(res))).toMatchObject({ input_tokens: 3, output_tokens: 3, usage_estimated: true });
  });

  it('keeps the upstream usage as it is, and estimates nothing without a 2xx answer', async () => {
    const normal = await chat({ model: 'fake/gpt-4o', stream: true });
    expect(await record(callId(normal))).toMatchObject({
      input_tokens: 11,
      output_tokens: 7,
      usage_estimated: false,
    });
    const failed = await chat({ model: 'fake/broken' });
    expect(failed.statusCode).toBe(500);
    expect(await record(callId(failed))).toMatchObject({
      input_tokens: null,
      output_tokens: null,
      cost_usd: null,
      usage_estimated: false,
    });
  });
});
