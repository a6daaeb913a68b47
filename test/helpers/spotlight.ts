import type { AddressInfo } from 'node:net';
import { call, type TestApp } from './app.js';
import type { TestUser } from './factories.js';

/** A provider credential of the user, created through the API. */
export async function createCredential(
  t: TestApp,
  user: TestUser,
  body: { name: string; base_url: string; api_key?: string },
): Promise<{ uuid: string; name: string }> {
  const res = await call(t.app, 'POST', '/user/provider_credentials', {
    token: user.token,
    body: { provider: 'openai', api_key: 'sk-test-upstream-key-0000', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`credential creation failed: ${res.body}`);
  return res.json();
}

/** Starts the app on a loopback port (the openai client needs a real server); returns its base URL. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/** Waits until `check` returns a value other than undefined (records are written as answers end). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
