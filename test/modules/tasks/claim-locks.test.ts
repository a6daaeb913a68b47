import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentsRepo } from '../../../src/modules/agents/agents-repo.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';

/*
 * A claim locks its agent's row so that the claims of one agent take turns. An insert of a task
 * checks its foreign key to the agent with FOR KEY SHARE on that row; under the claim's former
 * FOR UPDATE every submit of a busy agent waited for the claims in flight (PostgreSQL only: SQLite
 * has one writer and no row locks).
 */
describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('the agent lock of a claim on $name', (database) => {
  let t: TestApp;
  let probe: pg.Client;
  beforeAll(async () => {
    t = await buildTestApp(database);
    probe = new pg.Client({ connectionString: database.databaseUrl });
    await probe.connect();
    // Waiting at all for the row lock fails the probe at once instead of hanging.
    await probe.query("set lock_timeout = '200ms'");
  });
  afterAll(async () => {
    await probe.end();
    await t.close();
  });

  it("lets the foreign key check of a new task through, and still excludes another claim's lock", async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const seen = await t.runtime.db.transaction(async (trx) => {
      expect(await agentsRepo.findForClaim(trx, agent)).toMatchObject({ status: 'active' });
      const keyShare = await probe.query('select 1 from agents where uuid = $1 for key share', [agent]).then(
        () => 'granted',
        (err: Error) => err.message,
      );
      const otherClaim = await probe.query('select 1 from agents where uuid = $1 for no key update', [agent]).then(
        () => 'granted',
        (err: Error) => err.message,
      );
      return { keyShare, otherClaim };
    });
    expect(seen).toEqual({ keyShare: 'granted', otherClaim: expect.stringMatching(/lock timeout/) });
  });
});
