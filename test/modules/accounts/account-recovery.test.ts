import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, uniqueEmail } from '../../helpers/factories.js';

/*
 * An address belongs to whoever proves they own its mailbox: unverified registrations are
 * replaced and expire, verification links can be sent again, and a forgotten password is reset
 * by e-mail. Mail goes to the log here (no SMTP), which the tests read.
 */
describe.each(DATABASES)('account recovery on $name', (database) => {
  let t: TestApp;
  const clock = manualClock();
  const logged: Array<Record<string, unknown>> = [];
  const linksTo = (email: string, field: string) =>
    logged.filter((l) => l.to === email && typeof l[field] === 'string').map((l) => String(l[field]));
  const pathOf = (link: string) => link.slice(link.indexOf('/', 'http://x'.length));
  const tokenOf = (link: string) => new URL(link).searchParams.get('token') as string;
  const register = (email: string, password: string) =>
    call(t.app, 'POST', '/auth/register', { body: { email, password } });
  const login = (email: string, password: string) => call(t.app, 'POST', '/auth/login', { body: { email, password } });

  beforeAll(async () => {
    // No credential cache: the operator's commands run here through another accounts module (as the
    // CLI would), whose change this app hears only asynchronously on PostgreSQL.
    t = await buildTestApp(database, { clock, config: { unverifiedTtlHours: 2, credentialCacheMs: 0 } });
    const original = t.runtime.logger.info.bind(t.runtime.logger);
    t.runtime.logger.info = ((obj: unknown, ...rest: unknown[]) => {
      if (obj && typeof obj === 'object') logged.push(obj as Record<string, unknown>);
      return (original as (...a: unknown[]) => void)(obj, ...rest);
    }) as typeof t.runtime.logger.info;
  });
  afterAll(() => t.close());

  it('a second registration of an unverified e-mail replaces the first: same uuid, new password, old links void', async () => {
    const email = uniqueEmail();
    const squatter = await register(email, 'squatter password');
    expect(squatter.statusCode).toBe(201);
    const [squatterLink = ''] = linksTo(email, 'verification_link');
    const owner = await register(email.toUpperCase(), 'owner password');
    expect(owner.statusCode, owner.body).toBe(201);
    expect(owner.json().user).toEqual({ uuid: squatter.json().user.uuid, email, email_verified: false });
    expect((await call(t.app, 'GET', pathOf(squatterLink))).statusCode).toBe(400);
    const ownerLink = linksTo(email, 'verification_link').at(-1) as string;
    expect(ownerLink).not.toBe(squatterLink);
    expect((await call(t.app, 'GET', pathOf(ownerLink))).statusCode).toBe(200);
    expect((await login(email, 'squatter password')).statusCode).toBe(401);
    expect((await login(email, 'owner password')).statusCode).toBe(200);
  });

  it('an unverified registration expires after TASKHOOK_UNVERIFIED_TTL_HOURS: its link stops working and it is deleted', async () => {
    const email = uniqueEmail();
    const first = await register(email, 'first password');
    const link = linksTo(email, 'verification_link').at(-1) as string;
    clock.advance(2 * 3_600_000 + 1000);
    expect((await call(t.app, 'GET', pathOf(link))).statusCode).toBe(400);
    // The next registration of any address deletes expired ones; this one starts afresh.
    const again = await register(email, 'second password');
    expect(again.statusCode).toBe(201);
    expect(again.json().user.uuid).not.toBe(first.json().user.uuid);
  });

  it('housekeeping deletes an unverified registration once it expired, and leaves verified accounts and fresh ones', async () => {
    const stale = uniqueEmail();
    await register(stale, 'stale password');
    clock.advance(3_600_000);
    // A registration deletes expired ones itself: this one comes while the first is still young.
    const fresh = uniqueEmail();
    await register(fresh, 'fresh password');
    clock.advance(3_600_000 + 1000);
    const verified = await createUser(t);
    const result = await t.app.background.housekeep();
    expect(result.unverifiedAccounts).toBeGreaterThanOrEqual(1);
    const emails = (
      await t.runtime.db.kysely
        .selectFrom('users')
        .select('email')
        .where('email', 'in', [stale, fresh, verified.email])
        .execute()
    ).map((row) => row.email);
    expect(emails.sort()).toEqual([fresh, verified.email].sort());
  });

  it('resend_verification answers 202 {} for any e-mail and sends a new link to an unverified account, once a minute', async () => {
    const email = uniqueEmail();
    await register(email, 'a password 1');
    const resend = (e: string) => call(t.app, 'POST', '/auth/resend_verification', { body: { email: e } });
    clock.advance(61_000);
    const res = await resend(email);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({});
    expect(linksTo(email, 'verification_link')).toHaveLength(2);
    expect((await resend(email)).statusCode).toBe(202);
    expect(linksTo(email, 'verification_link')).toHaveLength(2);
    const verified = await createUser(t);
    const unknown = uniqueEmail();
    for (const e of [verified.email, unknown]) {
      const r = await resend(e);
      expect([r.statusCode, r.json()]).toEqual([202, {}]);
      expect(linksTo(e, 'verification_link')).toEqual([]);
    }
    expect((await call(t.app, 'POST', '/auth/resend_verification', { body: { email, extra: 1 } })).statusCode).toBe(
      400,
    );
  });

  it('a password reset by e-mail sets the password, ends earlier sessions (not keys), and works once within an hour', async () => {
    const user = await createUser(t);
    const ask = (email: string) => call(t.app, 'POST', '/auth/request_password_reset', { body: { email } });
    const asked = await ask(user.email);
    expect([asked.statusCode, asked.json()]).toEqual([202, {}]);
    const [link = ''] = linksTo(user.email, 'reset_link');
    expect(link).toContain('/dashboard/reset-password?token=');
    expect((await ask(uniqueEmail())).statusCode).toBe(202);

    const reset = (token: string, new_password: string) =>
      call(t.app, 'POST', '/auth/reset_password', { body: { token, new_password } });
    const short = await reset(tokenOf(link), 'short');
    expect(short.json().error.details.field).toBe('new_password');
    const done = await reset(tokenOf(link), 'a brand new password');
    expect(done.statusCode, done.body).toBe(204);
    expect((await login(user.email, 'a brand new password')).statusCode).toBe(200);
    expect((await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).statusCode).toBe(401);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-service-api-key': user.key } })).statusCode).toBe(
      200,
    );

    const used = await reset(tokenOf(link), 'yet another password');
    expect(used.statusCode).toBe(400);
    expect(used.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'token' } });
    clock.advance(61_000);
    await ask(user.email);
    const late = linksTo(user.email, 'reset_link').at(-1) as string;
    clock.advance(3_600_000 + 1000);
    expect((await reset(tokenOf(late), 'too late password')).json().error.details.field).toBe('token');
  });

  it('a disabled user: every credential stops, password login is 403; enabled again, they work', async () => {
    const user = await createUser(t);
    await t.accounts.disableByEmail(user.email);
    expect((await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).statusCode).toBe(401);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-service-api-key': user.key } })).statusCode).toBe(
      401,
    );
    const refused = await login(user.email, user.password);
    expect([refused.statusCode, refused.json()]).toEqual([403, { error: 'This account is disabled' }]);
    await t.accounts.enableByEmail(user.email);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-service-api-key': user.key } })).statusCode).toBe(
      200,
    );
    expect((await login(user.email, user.password)).statusCode).toBe(200);
  });

  it('a deleted user is gone with what they owned; the address can be registered again', async () => {
    const user = await createUser(t);
    const agent = await call(t.app, 'POST', '/agent', { token: user.token, body: { name: 'a' } });
    expect(agent.statusCode).toBe(201);
    await t.accounts.deleteByEmail(user.email);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-service-api-key': user.key } })).statusCode).toBe(
      401,
    );
    expect((await login(user.email, user.password)).statusCode).toBe(401);
    expect((await register(user.email, 'a fresh password')).statusCode).toBe(201);
  });
});
