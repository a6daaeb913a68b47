import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.js';
import { POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { uniqueEmail } from '../../helpers/factories.js';
import { type GoogleLike, startGoogleLike } from '../../helpers/google-like.js';
import { buildOAuthApp, consentAt, postCallback, startLogin } from '../../helpers/oauth.js';

// Two instances on one database: SQLite is one process's file, so this is PostgreSQL's case.
describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('OAuth across instances on $name', (database) => {
  let google: GoogleLike;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    google = await startGoogleLike();
    [a, b] = await Promise.all([buildOAuthApp(database, { google }), buildOAuthApp(database, { google })]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await google.close();
  });

  it('finishes on the second instance a login started on the first', async () => {
    google.identity = { sub: `g-${randomUUID()}`, email: uniqueEmail(), email_verified: true };
    const { url, state } = await startLogin(a, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    const res = await postCallback(b, 'google', { code, state });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().created).toBe(true);
  });

  it('lets exactly one of concurrent callbacks on both instances spend the state', async () => {
    for (let round = 0; round < 5; round++) {
      google.identity = { sub: `g-${randomUUID()}`, email: uniqueEmail(), email_verified: true };
      const { url, state } = await startLogin(a, 'google');
      const code = (await consentAt(url)).searchParams.get('code');
      const answers = await Promise.all([a, b, a, b].map((app) => postCallback(app, 'google', { code, state })));
      const statuses = answers.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([200, 400, 400, 400]);
      for (const r of answers.filter((x) => x.statusCode === 400)) {
        expect(r.json().error.code).toBe('OAUTH_STATE_INVALID');
      }
    }
  });
});
