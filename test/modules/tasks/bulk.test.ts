import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { cancelTask, claimOne, getTask, report, submitTask, workerHeaders } from '../../helpers/tasks.js';

/** POST /agent/:id/tasks/bulk. */
function bulk(t: TestApp, user: TestUser, agent: string, body: unknown) {
  return call(t.app, 'POST', `/agent/${agent}/tasks/bulk`, { headers: workerHeaders(user), body });
}

describe.each(DATABASES)('bulk actions on $name', (database) => {
  let t: TestApp;
  let clock: ReturnType<typeof manualClock>;

  beforeAll(async () => {
    clock = manualClock();
    t = await buildTestApp(database, { clock });
  });
  afterAll(() => t.close());

  async function fresh() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    return { user, agent };
  }

  /** Submits one task per metadata object, a millisecond apart (so oldest first is submit order). */
  async function submitEach(user: TestUser, agent: string, metadatas: Array<Record<string, unknown>>) {
    const ids: string[] = [];
    for (const metadata of metadatas) {
      clock.advance(1);
      ids.push((await submitTask(t, user, agent, { metadata })).task_id);
    }
    return ids;
  }

  async function auditOf(agent: string) {
    const rows = await t.runtime.db.kysely
      .selectFrom('audit_log')
      .select(['action', 'details', 'target_type'])
      .where('target_uuid', '=', agent)
      .where('action', 'like', 'task.bulk_%')
      .orderBy('at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      action: r.action,
      target_type: r.target_type,
      details: typeof r.details === 'string' ? JSON.parse(r.details) : r.details,
    }));
  }

  it('refuses a bad body with details.field, writing no audit entry', async () => {
    const { user, agent } = await fresh();
    const field = async (body: unknown) => {
      const res = await bulk(t, user, agent, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      return res.json().error.details.field as string;
    };
    expect(await field({ action: 'cancel', filter: {} })).toBe('filter');
    expect(await field({ action: 'pause', filter: { status: ['queued'] } })).toBe('action');
    expect(await field({ action: 'cancel' })).toBe('filter');
    expect(await field({ action: 'cancel', filter: { status: [] } })).toBe('filter.status');
    expect(await field({ action: 'cancel', filter: { status: ['queued', 'queued'] } })).toBe('filter.status');
    expect(await field({ action: 'cancel', filter: { status: ['done'] } })).toMatch(/^filter\.status/);
    expect(await field({ action: 'cancel', filter: { created_after: 'yesterday' } })).toBe('filter.created_after');
    expect(await field({ action: 'cancel', filter: { created_before: '2026-01-01' } })).toBe('filter.created_before');
    expect(await field({ action: 'cancel', filter: { metadata: {} } })).toBe('filter.metadata');
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i]));
    expect(await field({ action: 'cancel', filter: { metadata: many } })).toBe('filter.metadata');
    expect(await field({ action: 'cancel', filter: { metadata: { big: 'x'.repeat(17 * 1024) } } })).toBe(
      'filter.metadata',
    );
    expect(await field({ action: 'cancel', filter: { task_ids: [] } })).toBe('filter.task_ids');
    expect(await field({ action: 'cancel', filter: { task_ids: ['nope'] } })).toMatch(/^filter\.task_ids/);
    expect(await field({ action: 'cancel', filter: { other: 1 } })).toBe('filter.other');
    expect(await field({ action: 'cancel', filter: { status: ['queued'] }, limit: 0 })).toBe('limit');
    expect(await field({ action: 'cancel', filter: { status: ['queued'] }, limit: 1001 })).toBe('limit');
    expect(await field({ action: 'cancel', filter: { status: ['queued'] }, limit: '5' })).toBe('limit');
    const foreign = await createUser(t);
    expect((await bulk(t, foreign, agent, { action: 'cancel', filter: { status: ['queued'] } })).statusCode).toBe(404);
    expect(await auditOf(agent)).toEqual([]);
  });

  it('cancels matching open tasks oldest first, up to limit, with has_more; one audit entry per answer', async () => {
    const { user, agent } = await fresh();
    const ids = await submitEach(user, agent, [{ team: 'a' }, { team: 'b' }, { team: 'a' }, { team: 'a' }]);
    const body = { action: 'cancel', filter: { metadata: { team: 'a' } }, limit: 2 };
    const first = await bulk(t, user, agent, body);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({
      action: 'cancel',
      matched: 2,
      acted: 2,
      task_ids: [ids[0], ids[2]],
      has_more: true,
    });
    expect((await getTask(t, user, agent, ids[0] as string)).status).toBe('cancelled');
    expect((await getTask(t, user, agent, ids[1] as string)).status).toBe('queued');
    const second = await bulk(t, user, agent, body);
    expect(second.json()).toMatchObject({ matched: 1, acted: 1, task_ids: [ids[3]], has_more: false });
    const none = await bulk(t, user, agent, body);
    expect(none.json()).toEqual({ action: 'cancel', matched: 0, acted: 0, task_ids: [], has_more: false });
    expect(await auditOf(agent)).toEqual([
      {
        action: 'task.bulk_cancel',
        target_type: 'agent',
        details: { filter: body.filter, limit: 2, matched: 2, acted: 2 },
      },
      {
        action: 'task.bulk_cancel',
        target_type: 'agent',
        details: { filter: body.filter, limit: 2, matched: 1, acted: 1 },
      },
      {
        action: 'task.bulk_cancel',
        target_type: 'agent',
        details: { filter: body.filter, limit: 2, matched: 0, acted: 0 },
      },
    ]);
  });

  it('matches metadata by JSON equality, states, instants and ids (other agents’ ids match nothing)', async () => {
    const { user, agent } = await fresh();
    const ids = await submitEach(user, agent, [
      { cfg: { a: 1, b: [1, 2] }, n: 1 },
      { cfg: { b: [1, 2], a: 1 }, n: 1.0 },
      { cfg: { a: 1, b: [2, 1] }, n: 1 },
      { cfg: { a: 1, b: [1, 2], c: null }, n: 1 },
      { n: '1' },
    ]);
    const matching = async (filter: Record<string, unknown>) => {
      const res = await bulk(t, user, agent, { action: 'cancel', filter, limit: 1000 });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().task_ids as string[];
    };
    // Selection only: a filter that also names a final state selects nothing of it for cancel.
    const { lease_id } = await claimOne(t, user, agent);
    await report(t, user, agent, ids[0] as string, 'complete', { lease_id, result: { summary: 'ok' } });
    expect(await matching({ status: ['completed'] })).toEqual([]);
    const other = await fresh();
    const foreign = await submitTask(t, other.user, other.agent);
    expect(await matching({ task_ids: [foreign.task_id] })).toEqual([]);
    expect((await getTask(t, other.user, other.agent, foreign.task_id)).status).toBe('queued');
    const created = (await getTask(t, user, agent, ids[2] as string)).created_at;
    // created_after is inclusive, created_before exclusive; an offset is understood.
    const offset = new Date(Date.parse(created) + 7_200_000).toISOString().replace('Z', '+01:00');
    expect(await matching({ created_after: created, created_before: offset, metadata: { n: '1' } })).toEqual([ids[4]]);
    expect(await matching({ metadata: { cfg: { a: 1, b: [1, 2] }, n: 1 }, status: ['queued', 'completed'] })).toEqual([
      ids[1],
    ]);
    expect(await matching({ task_ids: [ids[2], ids[3], ids[0]] })).toEqual([ids[2], ids[3]]);
  });

  it('reruns final tasks without overrides; rerun_task_ids pairs with task_ids; refused on an unavailable agent', async () => {
    const { user, agent } = await fresh();
    const ids = await submitEach(user, agent, [{ k: 1 }, { k: 1 }, { k: 1 }]);
    await cancelTask(t, user, agent, ids[0] as string);
    const { lease_id } = await claimOne(t, user, agent);
    await report(t, user, agent, ids[1] as string, 'fail', { lease_id, error: { message: 'broke' } });
    const res = await bulk(t, user, agent, { action: 'rerun', filter: { metadata: { k: 1 } } });
    expect(res.statusCode).toBe(200);
    const answer = res.json();
    expect(answer).toMatchObject({
      action: 'rerun',
      matched: 2,
      acted: 2,
      task_ids: [ids[0], ids[1]],
      has_more: false,
    });
    expect(answer.rerun_task_ids).toHaveLength(2);
    for (const [i, made] of (answer.rerun_task_ids as string[]).entries()) {
      expect(await getTask(t, user, agent, made)).toMatchObject({ status: 'queued', rerun_of: answer.task_ids[i] });
    }
    expect(await auditOf(agent)).toEqual([
      {
        action: 'task.bulk_rerun',
        target_type: 'agent',
        details: { filter: { metadata: { k: 1 } }, limit: 1000, matched: 2, acted: 2 },
      },
    ]);

    await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { status: 'paused' } });
    const refused = await bulk(t, user, agent, { action: 'rerun', filter: { status: ['cancelled'] } });
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('AGENT_UNAVAILABLE');
    // Cancel works whatever the agent's status.
    const cancelled = await bulk(t, user, agent, { action: 'cancel', filter: { status: ['queued'] } });
    expect(cancelled.json()).toMatchObject({ matched: 3, acted: 3 });
    expect((await auditOf(agent)).map((e) => e.action)).toEqual(['task.bulk_rerun', 'task.bulk_cancel']);
  });

  it('concurrent bulk requests never both list a task', async () => {
    const { user, agent } = await fresh();
    const ids = await submitEach(
      user,
      agent,
      Array.from({ length: 12 }, () => ({ batch: 'x' })),
    );
    const body = { action: 'cancel', filter: { metadata: { batch: 'x' } } };
    const answers = await Promise.all([1, 2, 3].map(() => bulk(t, user, agent, body)));
    const listed = answers.flatMap((a) => a.json().task_ids as string[]);
    expect(listed.sort()).toEqual([...ids].sort());

    const reruns = await Promise.all(
      [1, 2, 3].map(() => bulk(t, user, agent, { action: 'rerun', filter: { metadata: { batch: 'x' } } })),
    );
    const rerunListed = reruns.flatMap((a) => a.json().task_ids as string[]);
    expect(rerunListed.sort()).toEqual([...ids].sort());
    const made = reruns.flatMap((a) => a.json().rerun_task_ids as string[]);
    expect(new Set(made).size).toBe(12);
    // A later bulk rerun reruns them again: only concurrent requests exclude each other.
    const later = await bulk(t, user, agent, { action: 'rerun', filter: { task_ids: [ids[0]] } });
    expect(later.json()).toMatchObject({ acted: 1, task_ids: [ids[0]] });
  });
});

describe.each(DATABASES)('bulk rerun and the rate limit on $name', (shared) => {
  const LIMIT = 40;
  let t: TestApp;
  let drop: () => Promise<void>;
  // Its own database: on a shared PostgreSQL database the rate-limit counters are shared too, and
  // another file's app on a manual clock starting at the same instant counts in the same window.
  beforeAll(async () => {
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { clock: manualClock(), config: { rateLimit: LIMIT } });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  it('counts one request per selected task, refusing the whole rerun (counted as one) when the window has fewer', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await submitTask(t, user, agent)).task_id);
    let res = await bulk(t, user, agent, { action: 'cancel', filter: { task_ids: ids } });
    expect(res.json()).toMatchObject({ acted: 6 });
    const remaining = (r: typeof res) => Number(r.headers['x-ratelimit-remaining']);
    // Spend the window down to 8 requests left (the manual clock keeps it open).
    while (remaining(res) > 8) res = await call(t.app, 'GET', `/agent/${agent}`, { headers: workerHeaders(user) });
    expect(remaining(res)).toBe(8);
    const rerun = (n: number) => bulk(t, user, agent, { action: 'rerun', filter: { task_ids: ids.slice(0, n) } });
    // Three tasks count three requests.
    res = await rerun(3);
    expect(res.statusCode).toBe(200);
    expect(remaining(res)).toBe(5);
    // Six tasks with five left: refused whole, nothing rerun, counted as one.
    res = await rerun(6);
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBeDefined();
    expect(remaining(res)).toBe(4);
    // Exactly as many as are left: done.
    res = await rerun(4);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ acted: 4 });
    expect(remaining(res)).toBe(0);
    const list = await t.runtime.db.kysely
      .selectFrom('tasks')
      .select('uuid')
      .where('agent_uuid', '=', agent)
      .where('rerun_of', 'is not', null)
      .execute();
    expect(list).toHaveLength(7);
    // A cancel counts as one whatever its size (and is refused now like any request).
    expect((await bulk(t, user, agent, { action: 'cancel', filter: { status: ['queued'] } })).statusCode).toBe(429);
  });
});
