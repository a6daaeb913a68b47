import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { argon2id, createPasswordHasher, DEFAULT_HASH_CONCURRENCY } from '../../../src/lib/passwords.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';

/*
 * Password hashing is bounded: at most `concurrency` argon2 runs at once (2 x CPU cores by
 * default), the rest wait in turn at most `maxWaitMs` (5 s by default), then the request is
 * refused 503 SERVICE_UNAVAILABLE with Retry-After. The real argon2 runs underneath; the tests
 * only count how many runs overlap, or hold one at a gate the test opens.
 */

/** Real argon2, counting overlapping runs. */
function counting() {
  let active = 0;
  let peak = 0;
  const track =
    <A extends unknown[], T>(fn: (...args: A) => Promise<T>) =>
    async (...args: A) => {
      active++;
      peak = Math.max(peak, active);
      try {
        return await fn(...args);
      } finally {
        active--;
      }
    };
  return {
    argon2: { hash: track(argon2id.hash), verify: track(argon2id.verify) },
    get peak() {
      return peak;
    },
  };
}

describe('bounded password hashing', () => {
  it('defaults to one hash per CPU core (more would only take CPU from the event loop)', () => {
    expect(DEFAULT_HASH_CONCURRENCY).toBe(availableParallelism());
  });

  it('never runs more than `concurrency` hashes and verifications at once; the rest wait their turn', async () => {
    const probe = counting();
    const hasher = createPasswordHasher({ concurrency: 2, maxWaitMs: 60_000, argon2: probe.argon2 });
    const stored = await hasher.hash('correct horse');
    const checks = await Promise.all([
      ...Array.from({ length: 4 }, () => hasher.check(stored, 'correct horse')),
      ...Array.from({ length: 4 }, () => hasher.check(stored, 'wrong horse')),
      hasher.check(undefined, 'no such user'),
      hasher.hash('another').then(() => true),
    ]);
    expect(checks).toEqual([true, true, true, true, false, false, false, false, false, true]);
    expect(probe.peak).toBe(2);
    expect(hasher.load()).toEqual({ active: 0, waiting: 0 });
  });
});

describe.each(DATABASES)('login while the hashing slots are full on $name', (database) => {
  let t: TestApp;
  // A gate in front of argon2's verify that the test can close: a login then holds the one slot.
  let hold: { entered: () => void; open: Promise<void> } | null = null;
  const hasher = createPasswordHasher({
    concurrency: 1,
    maxWaitMs: 50,
    argon2: {
      hash: argon2id.hash,
      verify: async (stored, password) => {
        const gate = hold;
        if (gate) {
          gate.entered();
          await gate.open;
        }
        return argon2id.verify(stored, password);
      },
    },
  });

  beforeAll(async () => {
    t = await buildTestApp(database, { passwords: hasher });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After after the wait; the login holding the slot succeeds', async () => {
    const user = await createUser(t);
    let entered!: () => void;
    let open!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    hold = { entered, open: new Promise<void>((resolve) => (open = resolve)) };
    const login = (password: string) => call(t.app, 'POST', '/auth/login', { body: { email: user.email, password } });

    const first = login(user.password);
    await inside;
    hold = null;
    const refused = await login('a wrong password');
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({
      success: false,
      error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('password') },
    });
    const unknown = await call(t.app, 'POST', '/auth/login', {
      body: { email: 'nobody@example.test', password: 'whatever-123' },
    });
    expect(unknown.statusCode).toBe(503);

    open();
    expect((await first).statusCode).toBe(200);
    expect(hasher.load()).toEqual({ active: 0, waiting: 0 });
    expect((await login(user.password)).statusCode).toBe(200);
  });
});
