import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, eventually, listen } from '../../helpers/spotlight.js';

const messages = [{ role: 'user', content: 'hi' }];
const KIB = 1024;

/** What the proxy holds of one upstream answer is bounded, and so is what one account holds open. */
describe.each(DATABASES)('model proxy caps on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let user: TestUser;

  const record = (id: string) =>
    call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.token }).then((r) => r.json());
  const chat = (who: TestUser, body: Record<string, unknown>) =>
    fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages, ...body }),
    });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, {
      config: {
        allowPrivateUrls: true,
        proxyTimeoutMs: 1500,
        proxyMaxAnswerBytes: 64 * KIB,
        proxyMaxEventBytes: 64 * KIB,
        proxyMaxStreamBytes: 512 * KIB,
        proxyMaxInFlightPerAccount: 2,
      },
    });
    base = await listen(t);
    user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  const lastEvent = (text: string) => JSON.parse((text.trim().split('\n\n').at(-1) ?? '').replace(/^data: /, ''));

  it('ends a stream whose event never ends once the event passes its cap, telling the caller and the record', async () => {
    const res = await chat(user, { model: 'fake/huge', stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    // Nothing of the unended event reached the caller: only the error event.
    expect(text.length).toBeLessThan(KIB);
    expect(lastEvent(text)).toEqual({
      error: {
        message: expect.stringContaining(`larger than ${64 * KIB} bytes`),
        type: 'upstream_error',
        param: null,
        code: 'upstream_error',
      },
    });
    const rec = await record(res.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({ status_code: 200, stream: true, error: { code: 'upstream_error' } });
    expect(rec.error.message).toContain(`larger than ${64 * KIB} bytes`);
  });

  it('ends a stream of whole events once the answer passes its cap', async () => {
    const res = await chat(user, { model: 'fake/long', stream: true });
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    expect(text.length).toBeLessThanOrEqual(512 * KIB + 2 * KIB);
    expect(lastEvent(text).error).toMatchObject({
      code: 'upstream_error',
      message: expect.stringContaining(`${512 * KIB}`),
    });
    const rec = await record(res.headers.get('x-taskhook-call-id') ?? '');
    expect(rec.error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining(`${512 * KIB}`) });
  });

  it('answers 502 naming the limit when a non-streamed answer is larger than its cap', async () => {
    const res = await chat(user, { model: 'fake/huge' });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; type: string; code: string } };
    expect(body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
    expect(body.error.message).toContain(`larger than ${64 * KIB} bytes`);
    const rec = await record(res.headers.get('x-taskhook-call-id') ?? '');
    expect(rec).toMatchObject({ status_code: 502, error: { code: 'upstream_error' } });
  });

  it("refuses a call beyond the account's in-flight cap with 429 LIMIT_EXCEEDED, other accounts unaffected", async () => {
    upstream.resetGate();
    const held = [
      await chat(user, { model: 'fake/gated', stream: true }),
      await chat(user, { model: 'fake/gated', stream: true }),
    ];
    const readers = held.map((r) => r.text());
    const refused = await chat(user, { model: 'fake/gpt-4o' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      error: {
        message: expect.stringContaining('At most 2'),
        type: 'invalid_request_error',
        param: null,
        code: 'LIMIT_EXCEEDED',
      },
    });
    const models = await fetch(`${base}/spotlight/v1/models`, { headers: { authorization: `Bearer ${user.key}` } });
    expect(models.status).toBe(429);

    const other = await createUser(t);
    await createCredential(t, other, { name: 'fake', base_url: upstream.baseUrl });
    expect((await chat(other, { model: 'fake/gpt-4o' })).status).toBe(200);

    upstream.release();
    await Promise.all(readers);
    // The slots come back when the answers end.
    const again = await eventually(async () => {
      const res = await chat(user, { model: 'fake/gpt-4o' });
      return res.status === 200 ? res.status : undefined;
    });
    expect(again).toBe(200);
  });

  it('lists models asking at most 4 upstreams at once, leaving out a list larger than 1 MiB', async () => {
    const many = await createUser(t);
    // Newest first is the order they are asked in: the slow ones last, so the deadline only cuts them.
    const later = () => new Promise((resolve) => setTimeout(resolve, 2));
    for (let i = 0; i < 8; i++) {
      await createCredential(t, many, { name: `slow${i}`, base_url: upstream.baseUrl, api_key: 'slow-key' });
    }
    await later();
    await createCredential(t, many, { name: 'huge', base_url: upstream.baseUrl, api_key: 'huge-models-key' });
    await later();
    await createCredential(t, many, { name: 'good', base_url: upstream.baseUrl });
    upstream.state.modelsPeak = 0;
    const res = await fetch(`${base}/spotlight/v1/models`, { headers: { authorization: `Bearer ${many.key}` } });
    expect(res.status).toBe(200);
    const ids = ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['good/gpt-4o-mini', 'good/gpt-4o']));
    expect(ids.filter((id) => !id.startsWith('good/'))).toEqual([]);
    expect(upstream.state.modelsPeak).toBeGreaterThan(0);
    expect(upstream.state.modelsPeak).toBeLessThanOrEqual(4);

    const one = await fetch(`${base}/spotlight/v1/models`, {
      headers: { authorization: `Bearer ${many.key}`, 'x-taskhook-credential': 'huge' },
    });
    expect(one.status).toBe(502);
    expect(((await one.json()) as { error: { message: string } }).error.message).toContain('larger than');
  });
});
