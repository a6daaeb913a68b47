import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential } from '../../helpers/spotlight.js';

const messages = [{ role: 'user', content: 'hi' }];
const DAY_MS = 86_400_000;

describe.each(DATABASES)('model proxy limits and upkeep on $name', (database) => {
  let upstream: FakeOpenAi;
  const apps: TestApp[] = [];
  const app = async (opts: Parameters<typeof buildTestApp>[1]) => {
    const t = await buildTestApp(database, opts);
    apps.push(t);
    return t;
  };

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    await upstream.close();
  });

  it("takes bodies up to TASKHOOK_PROXY_MAX_BODY_BYTES (not the API limit) and answers 413 in OpenAI's shape above it", async () => {
    const t = await app({ config: { allowPrivateUrls: true, maxBodyBytes: 2048, proxyMaxBodyBytes: 8192 } });
    const user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const body = (size: number) => ({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(size) }] });
    const fits = await call(t.app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body: body(4096) });
    expect(fits.statusCode).toBe(200);
    const big = await call(t.app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body: body(10_000) });
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({
      error: { message: 'Request body is too large', type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('refuses an upstream whose name resolves to a private address at call time (502), though it was public when saved', async () => {
    let answer: LookupAddress[] = [{ address: '93.184.215.14', family: 4 }];
    const t = await app({ lookup: async () => answer });
    const user = await createUser(t);
    await createCredential(t, user, { name: 'rebind', base_url: 'http://models.example.com/v1' });
    answer = [{ address: '127.0.0.1', family: 4 }];
    const res = await call(t.app, 'POST', '/spotlight/v1/chat/completions', {
      token: user.key,
      body: { model: 'rebind/gpt-4o', messages },
    });
    expect(res.statusCode).toBe(502);
    expect(res.json().error).toMatchObject({ type: 'upstream_error', code: 'upstream_unreachable' });
    expect(upstream.seen.some((s) => s.headers.host?.startsWith('models.example.com'))).toBe(false);
  });

  it('records last use of a credential and deletes records past the retention', async () => {
    const clock = manualClock(Date.parse('2025-01-10T12:00:00.000Z'));
    const t = await app({ clock, config: { allowPrivateUrls: true, spotlightRetentionDays: 30, retentionDays: 3650 } });
    const user = await createUser(t);
    const cred = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const chat = () =>
      call(t.app, 'POST', '/spotlight/v1/chat/completions', {
        token: user.key,
        body: { model: 'fake/gpt-4o', messages },
      });
    const old = String((await chat()).headers['x-taskhook-call-id']);
    const used = (await call(t.app, 'GET', `/user/provider_credentials/${cred.uuid}`, { token: user.token })).json();
    expect(used.last_used_at).toBe('2025-01-10T12:00:00.000Z');
    clock.advance(20 * DAY_MS);
    const recent = String((await chat()).headers['x-taskhook-call-id']);
    clock.advance(15 * DAY_MS);

    expect((await t.app.background.housekeep()).spotlightCalls).toBeGreaterThanOrEqual(1);
    const status = async (id: string) =>
      (await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: user.key })).statusCode;
    expect({ old: await status(old), recent: await status(recent) }).toEqual({ old: 404, recent: 200 });
  });
});
