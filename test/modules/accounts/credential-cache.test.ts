import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SqliteDatabase from '../../../src/db/sqlite-driver.js';
import { createAuthenticator } from '../../../src/modules/accounts/accounts-auth.js';
import { accountsRepo } from '../../../src/modules/accounts/accounts-repo.js';
import { createSessionTokens } from '../../../src/modules/accounts/accounts-tokens.js';
import { type CredentialCache, createCredentialCache } from '../../../src/modules/accounts/credential-cache.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { actingAs, createUser } from '../../helpers/factories.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until the request answers `status`; returns how long that took (ms), or -1 after `limitMs`. */
async function until(t: TestApp, key: string, url: string, status: number, limitMs = 1000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started <= limitMs) {
    const res = await call(t.app, 'GET', url, { headers: { 'x-api-key': key } });
    if (res.statusCode === status) return Date.now() - started;
    await sleep(10);
  }
  return -1;
}

// Two instances on one database, as in a deployment with several servers. Each instance caches:
// on PostgreSQL it listens for changes; on SQLite it hears its own process's changes and watches
// the file for other processes' writes.
describe.each(DATABASES)('credential cache across two instances on $name', (database) => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    // A cache lifetime far beyond the one-second bound: only a notification can void an entry in time.
    a = await buildTestApp(database, { config: { credentialCacheMs: 60_000 } });
    b = await buildTestApp(database, { config: { dataDir: a.config.dataDir, credentialCacheMs: 60_000 } });
    if (database.name === 'postgres') await sleep(200); // both listeners connected
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a key revoked on one instance is refused at once there and within a second on the other', async () => {
    const user = await createUser(a);
    // Fill both caches.
    for (const t of [a, b]) {
      expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': user.key } })).statusCode).toBe(200);
    }
    const revoked = await call(a.app, 'DELETE', `/auth/platform_keys/${user.keyUuid}`, { token: user.token });
    expect(revoked.statusCode).toBeLessThan(300);
    expect((await call(a.app, 'GET', '/agent/list', { headers: { 'x-api-key': user.key } })).statusCode).toBe(401);
    expect(await until(b, user.key, '/agent/list', 401)).toBeGreaterThanOrEqual(0);
  });

  it('a change made outside any server (the CLI) takes effect on every instance', async () => {
    const user = await createUser(a);
    // An unverified account's key is refused with 403; verifying it through another process's
    // service (what `taskhook user verify` runs) lets the key in.
    const email = `unverified-${user.uuid}@example.test`;
    const other = await a.accounts.createUser({
      email,
      password: 'a long password',
      verified: false,
      agentsEnabled: true,
    });
    const issued = await a.accounts.createPlatformKey(actingAs(other), other.uuid, 'cli');
    for (const t of [a, b]) {
      const res = await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': issued.key } });
      expect(res.statusCode).toBe(403);
    }
    await b.accounts.verifyByEmail(email);
    for (const t of [a, b]) expect(await until(t, issued.key, '/agent/list', 200)).toBeGreaterThanOrEqual(0);
  });

  it('changes made outside the servers are refused within the bound even for many cached keys', async () => {
    const users = await Promise.all([createUser(a), createUser(a), createUser(a)]);
    for (const u of users) await call(b.app, 'GET', '/agent/list', { headers: { 'x-api-key': u.key } });
    // Revoked by the instance-less service (a CLI-like process): only the notification reaches b.
    await Promise.all(users.map((u) => a.accounts.revokePlatformKey(actingAs(u), u.keyUuid)));
    for (const u of users) expect(await until(b, u.key, '/agent/list', 401)).toBeGreaterThanOrEqual(0);
  });

  it.runIf(database.name === 'sqlite')(
    'a write by another process on the SQLite file (no announcement at all) empties the cache',
    async () => {
      const user = await createUser(a);
      for (const t of [a, b]) {
        expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': user.key } })).statusCode).toBe(200);
      }
      // What another process sees: a connection of its own, writing the row directly.
      const other = new SqliteDatabase(path.join(a.config.dataDir, 'taskhook.sqlite'));
      try {
        other.pragma('busy_timeout = 5000');
        other
          .prepare('update platform_keys set revoked_at = ? where uuid = ?')
          .run(new Date().toISOString(), user.keyUuid);
      } finally {
        other.close();
      }
      for (const t of [a, b]) expect(await until(t, user.key, '/agent/list', 401)).toBeGreaterThanOrEqual(0);
    },
  );
});

describe.each(DATABASES)('authenticator with a listening cache on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t?.close());

  function counted(cache: CredentialCache) {
    const calls = { lookups: 0 };
    const repo = {
      ...accountsRepo,
      findLiveCredential: (...args: Parameters<typeof accountsRepo.findLiveCredential>) => {
        calls.lookups++;
        return accountsRepo.findLiveCredential(...args);
      },
    };
    const authenticate = createAuthenticator({
      db: t.runtime.db,
      repo,
      tokens: createSessionTokens(t.runtime.secrets.jwtSecret, () => Date.now()),
      clock: t.runtime.clock,
      log: t.runtime.logger,
      cache,
    });
    return { calls, authenticate };
  }

  it('looks a key up once while listening, again after the entry expires or the user changes', async () => {
    const user = await createUser(t);
    let now = Date.now();
    const cache = createCredentialCache({ ttlMs: 1000, now: () => now });
    cache.setListening(true);
    const { calls, authenticate } = counted(cache);
    const headers = { 'x-api-key': user.key };
    for (let i = 0; i < 5; i++) expect((await authenticate(headers, 'user')).userUuid).toBe(user.uuid);
    expect(calls.lookups).toBe(1);
    now += 1001;
    await authenticate(headers, 'user');
    expect(calls.lookups).toBe(2);
    cache.invalidate(user.uuid);
    await authenticate(headers, 'user');
    expect(calls.lookups).toBe(3);
    cache.setListening(false); // connection lost: every request looks the key up
    await authenticate(headers, 'user');
    await authenticate(headers, 'user');
    expect(calls.lookups).toBe(5);
  });

  it('never caches a lookup that an invalidation overtook', async () => {
    const user = await createUser(t);
    const cache = createCredentialCache({ ttlMs: 60_000, now: () => Date.now() });
    cache.setListening(true);
    const { calls, authenticate } = counted(cache);
    const pending = authenticate({ 'x-api-key': user.key }, 'user');
    cache.invalidate(user.uuid); // arrives while the lookup is in flight
    await pending;
    await authenticate({ 'x-api-key': user.key }, 'user');
    expect(calls.lookups).toBe(2);
  });
});
