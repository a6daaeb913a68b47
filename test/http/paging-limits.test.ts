import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../src/lib/time.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { expectErrorEnvelope } from '../helpers/routes.js';
import { createTrigger } from '../helpers/triggers.js';

describe.each(DATABASES)('paging limits on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('refuses page above 10,000 on every paged list with 400, and answers page 10,000', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent, { message_template: 'go' });
    const lists = [
      '/agent/list',
      `/agent/${agent}/tasks`,
      `/v1/agent/${agent}/triggers`,
      `/v1/agent/${agent}/triggers/${trigger.uuid}/deliveries`,
    ];
    for (const url of lists) {
      for (const page of ['10001', '9999999999999999']) {
        const res = await call(t.app, 'GET', `${url}?page=${page}`, { token: user.token });
        expect({ url, page, status: res.statusCode }).toEqual({ url, page, status: 400 });
        expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'page');
      }
      const last = await call(t.app, 'GET', `${url}?page=10000`, { token: user.token });
      expect({ url, status: last.statusCode }).toEqual({ url, status: 200 });
    }
  });

  it('lists at most 1,000 platform keys and ingest tokens, newest first', async () => {
    const user = await createUser(t);
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const rows = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        uuid: randomUUID(),
        workspace_uuid: user.uuid,
        prefix: `p${i}`,
        created_at: iso(base + i * 1000),
        last_used_at: null,
        revoked_at: null,
      }));
    const db = t.runtime.db.kysely;
    const keys = rows(1005).map((r, i) => ({ ...r, name: `key ${i}`, key_hash: `hash-k-${randomUUID()}` }));
    const tokens = rows(1005).map((r) => ({ ...r, token_hash: `hash-t-${randomUUID()}` }));
    for (let i = 0; i < keys.length; i += 200) {
      await db
        .insertInto('platform_keys')
        .values(keys.slice(i, i + 200))
        .execute();
      await db
        .insertInto('ingest_tokens')
        .values(tokens.slice(i, i + 200))
        .execute();
    }
    for (const [url, field] of [
      ['/auth/platform_keys', 'keys'],
      ['/auth/ingest_tokens', 'tokens'],
    ] as const) {
      const res = await call(t.app, 'GET', url, { token: user.token });
      expect(res.statusCode).toBe(200);
      const list = res.json()[field] as Array<{ created_at: string }>;
      expect(list).toHaveLength(1000);
      // The newest 1,000 of the 1,005 (plus the factory's own key, created now) are listed.
      expect(list.at(-1)?.created_at).toBe(iso(base + 5 * 1000 + (field === 'keys' ? 1000 : 0)));
      for (let i = 1; i < list.length; i++)
        expect((list[i - 1]?.created_at ?? '') >= (list[i]?.created_at ?? '')).toBe(true);
    }
  });
});
