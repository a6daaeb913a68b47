import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';

/*
 * A header value that no HTTP request may carry (CR, LF, other control characters) is refused
 * when the agent is created or updated, naming the header, not when a task later runs.
 */
describe.each(DATABASES)('runtime header values on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  // Nothing is ever sent to this address: the agents are only saved.
  const runtime = (headers: Record<string, string>) => ({ type: 'http', url: 'http://127.0.0.1:9/run', headers });

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { allowPrivateUrls: true } });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  const refused = (res: {
    statusCode: number;
    body: string;
    json(): { error: { code: string; details: unknown } };
  }) => {
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('INVALID_REQUEST');
    return res.json().error.details;
  };

  it.each([
    ['CR LF', 'token\r\nX-Injected: 1'],
    ['LF', 'token\nmore'],
    ['DEL', 'token\u007f'],
    ['a character beyond 0xFF', 'token\u2028'],
  ])('refuses a value with %s at create, naming runtime.headers.<Name>', async (_what, value) => {
    const res = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'h', runtime: runtime({ 'X-Api-Key': value }) },
    });
    expect(refused(res)).toMatchObject({ field: 'runtime.headers.X-Api-Key' });
  });

  it('refuses such a value at update and keeps the stored one; tabs, spaces and Latin-1 are fine', async () => {
    const created = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'h', runtime: runtime({ 'X-Api-Key': 'Bearer\tabc déf' }) },
    });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = created.json().uuid as string;
    const res = await call(t.app, 'PATCH', `/agent/${uuid}`, {
      token: user.token,
      body: { runtime: runtime({ 'X-Api-Key': 'new\r\nvalue' }) },
    });
    expect(refused(res)).toMatchObject({ field: 'runtime.headers.X-Api-Key' });
    const read = await call(t.app, 'GET', `/agent/${uuid}`, { token: user.token });
    expect(read.json().runtime.headers).toEqual({ 'X-Api-Key': '********' });
  });
});
