import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';

/*
 * Creating a trigger takes its agent's row lock, so the count of the agent's triggers and the
 * insert are one step. An agent deleted while the creation waited for that lock must get no
 * trigger (PostgreSQL only: SQLite's single writer never lets the two interleave).
 */
describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('trigger creation racing a deletion on $name', (database) => {
  let t: TestApp;
  let other: pg.Client;
  beforeAll(async () => {
    t = await buildTestApp(database);
    other = new pg.Client({ connectionString: database.databaseUrl });
    await other.connect();
  });
  afterAll(async () => {
    await other.end();
    await t.close();
  });

  it('answers 404 and stores nothing when the agent is deleted while the creation waits for it', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    // Another transaction holds the agent as a deletion would, and deletes it once the creation waits.
    await other.query('begin');
    await other.query('select 1 from agents where uuid = $1 for no key update', [agent]);
    // Started now (an inject only runs once something awaits it).
    const creating = Promise.resolve(
      call(t.app, 'POST', `/v1/agent/${agent}/triggers`, {
        token: user.token,
        body: { name: 'late', message_template: 'hello' },
      }),
    );
    await vi.waitFor(
      async () => {
        // Some backend is waiting for the lock this connection holds: the creation's.
        const { rows } = await other.query(
          'select count(*)::int as n from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))',
        );
        expect(rows[0].n).toBeGreaterThanOrEqual(1);
      },
      { timeout: 5000 },
    );
    await other.query('update agents set deleted_at = now()::text where uuid = $1', [agent]);
    await other.query('commit');
    const res = await creating;
    expect(res.statusCode).toBe(404);
    const { rows } = await other.query('select count(*)::int as n from triggers where agent_uuid = $1', [agent]);
    expect(rows[0].n).toBe(0);
  });
});
