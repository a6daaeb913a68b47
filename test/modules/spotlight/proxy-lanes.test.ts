import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential, eventually, listen } from '../../helpers/spotlight.js';

/**
 * The proxy's upstream connections are shared through per-workspace lanes: however many calls one
 * workspace has hanging at one provider, it holds at most its lane's share of the connections, and
 * another workspace's call to the same provider goes out at once.
 */
describe.each(DATABASES)('model proxy lanes per workspace on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  let base: string;
  let noisy: TestUser;
  let quiet: TestUser;

  const chat = (who: TestUser, model: string, signal?: AbortSignal) =>
    fetch(`${base}/spotlight/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      signal,
    });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, {
      config: { allowPrivateUrls: true, proxyTimeoutMs: 20_000, outboundPerAccount: 2 },
    });
    base = await listen(t);
    [noisy, quiet] = [await createUser(t), await createUser(t)];
    await createCredential(t, noisy, { name: 'up', base_url: upstream.baseUrl });
    await createCredential(t, quiet, { name: 'up', base_url: upstream.baseUrl });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it('holds one workspace to its lane while another workspace is served at once', async () => {
    const stop = new AbortController();
    const hanging = Array.from({ length: 6 }, () => chat(noisy, 'up/hang', stop.signal).catch(() => undefined));
    const hangsSeen = () => upstream.seen.filter((r) => r.body?.model === 'hang').length;
    await eventually(async () => (hangsSeen() >= 2 ? true : undefined));
    const res = await chat(quiet, 'up/gpt-4o-mini');
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(answer.choices[0]?.message.content).toBe('Hello there');
    // The noisy workspace's other four calls are still waiting for its lane, not at the upstream.
    await new Promise((r) => setTimeout(r, 200));
    expect(hangsSeen()).toBe(2);
    stop.abort();
    await Promise.all(hanging);
  });
});
