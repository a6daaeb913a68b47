import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';

const MINUTE = 60_000;
const LIMIT = 6;

/**
 * The authenticated rate-limit window is the workspace's: every member's sessions and keys of a
 * team share one, a member's personal workspace keeps its own.
 */
describe.each(DATABASES)('the rate limit per workspace on $name', (database) => {
  let t: TestApp;
  let team: string;
  let alice: TestUser;
  let bob: TestUser;
  // A minute far from real time (and from other files' counts on shared storage).
  const clock = manualClock(
    Math.floor((Date.now() + (1 + Math.floor(Math.random() * 1e6)) * 3_600_000) / MINUTE) * MINUTE,
  );

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { rateLimit: LIMIT } });
    [alice, bob] = [await createUser(t), await createUser(t)];
    team = randomUUID();
    const at = new Date().toISOString();
    const db = t.runtime.db.kysely;
    await db
      .insertInto('workspaces')
      .values({ uuid: team, name: 'Team', personal: 0, created_at: at, updated_at: at, deleted_at: null })
      .execute();
    for (const user of [alice, bob]) {
      await db
        .insertInto('workspace_members')
        .values({ workspace_uuid: team, user_uuid: user.uuid, role: 'member', joined_at: at })
        .execute();
    }
    clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE);
  });
  afterAll(() => t.close());

  it('counts two members of a team in one window, and each personal workspace in its own', async () => {
    const inTeam = (who: TestUser) =>
      call(t.app, 'GET', '/agent/list', { token: who.token, headers: { 'x-taskhook-workspace': team } });
    const remaining: number[] = [];
    for (const who of [alice, bob, alice, bob])
      remaining.push(Number((await inTeam(who)).headers['x-ratelimit-remaining']));
    expect(remaining).toEqual([LIMIT - 1, LIMIT - 2, LIMIT - 3, LIMIT - 4]);
    // Alice's personal workspace has its own window.
    const personal = await call(t.app, 'GET', '/agent/list', { token: alice.token });
    expect(Number(personal.headers['x-ratelimit-remaining'])).toBe(LIMIT - 1);
    await inTeam(alice);
    await inTeam(bob);
    const over = await inTeam(alice);
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('RATE_LIMITED');
    // Bob's personal workspace is not touched by the team's window.
    expect((await call(t.app, 'GET', '/agent/list', { token: bob.token })).statusCode).toBe(200);
  });
});
