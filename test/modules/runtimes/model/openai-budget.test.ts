import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetsRepo } from '../../../../src/modules/spotlight/budgets/budgets-repo.js';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { DATABASES, ownDatabase, tempDir } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../../helpers/fake-openai.js';
import { createCredential } from '../../../helpers/spotlight.js';
import { sendMessage, submitTask, waitForStatus } from '../../../helpers/tasks.js';

/** `ask` priced at 1,000 USD per million tokens: each run (11 in, 7 out) costs 0.018 USD. */
const RUN_USD = 0.018;

describe.each(DATABASES)('openai runtime under budgets on $name', (shared) => {
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let upstream: FakeOpenAi;
  let user: TestUser;
  let credential: string;

  const modelAgent = (model: string, extra: Record<string, unknown> = {}) =>
    createAgent(t, user, { runtime: { type: 'openai', provider_credential_uuid: credential, model, ...extra } });
  const setBudget = async (agentUuid: string, body: Record<string, unknown>) => {
    const res = await call(t.app, 'PATCH', `/spotlight/budgets/agents/${agentUuid}`, { token: user.token, body });
    expect(res.statusCode).toBe(200);
  };
  const callsOf = (model: string) => upstream.seen.filter((s) => s.body?.model === model).length;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    const prices = path.join(tempDir(), 'prices.json');
    writeFileSync(prices, JSON.stringify({ ask: { input: 1000, output: 1000 } }));
    // Storage of its own: every app's dispatcher runs every model agent's tasks it finds.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, {
      config: { allowPrivateUrls: true, sweepIntervalMs: 200, modelPricesFile: prices },
    });
    user = await createUser(t);
    credential = (await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl })).uuid;
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
    await drop();
  });

  it('a runaway agent stops at its per-task budget with BUDGET_EXCEEDED, not retried', async () => {
    // The agent asks a question on every run; each answer starts another run, each one paid.
    const agent = await modelAgent('ask', { allow_input_requests: true });
    await setBudget(agent.uuid, { per_task_usd: 2 * RUN_USD - 0.001 });
    const before = callsOf('ask');
    const { task_id } = await submitTask(t, user, agent.uuid, { message: 'review it' });
    await waitForStatus(t, user, agent.uuid, task_id, 'awaiting_input');
    await sendMessage(t, user, agent.uuid, task_id, 'main');
    await waitForStatus(t, user, agent.uuid, task_id, 'awaiting_input');
    // Spent 0.036 ≥ 0.035: the third run is refused before it goes upstream.
    await sendMessage(t, user, agent.uuid, task_id, 'still main');
    const failed = await waitForStatus(t, user, agent.uuid, task_id, 'failed');
    expect(failed.error?.code).toBe('BUDGET_EXCEEDED');
    expect(failed.error?.message).toContain('task limit of 0.035 USD');
    expect(callsOf('ask') - before).toBe(2);
    const budget = (await call(t.app, 'GET', `/spotlight/budgets/tasks/${task_id}`, { token: user.token })).json();
    expect(budget.windows.task).toMatchObject({ limit_usd: 0.035, spent_usd: 0.036, exceeded: true });
    const calls = (await call(t.app, 'GET', `/spotlight/calls?task_id=${task_id}`, { token: user.token })).json().calls;
    expect(calls.map((c: { status_code: number; source: string }) => [c.status_code, c.source])).toEqual([
      [429, 'runtime'],
      [200, 'runtime'],
      [200, 'runtime'],
    ]);
    expect(calls[0]).toMatchObject({ error: { code: 'budget_exceeded' }, cost_usd: null, platform_key_uuid: null });
  });

  it("an agent's daily limit of 0 fails its tasks at once, without going upstream", async () => {
    const agent = await modelAgent('gpt-4o');
    await setBudget(agent.uuid, { daily_usd: 0 });
    const before = callsOf('gpt-4o');
    const { task_id } = await submitTask(t, user, agent.uuid);
    const failed = await waitForStatus(t, user, agent.uuid, task_id, 'failed');
    expect(failed.error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(failed.error?.message).toContain('agent limit of 0 USD for this day');
    expect(callsOf('gpt-4o')).toBe(before);
    // Not retried: one refused run, one record.
    const calls = (await call(t.app, 'GET', `/spotlight/calls?task_id=${task_id}`, { token: user.token })).json().calls;
    expect(calls.map((c: { status_code: number }) => c.status_code)).toEqual([429]);
  });

  it('an unpriced model under a budget fails the task at once with MODEL_NOT_PRICED, nothing upstream', async () => {
    const agent = await modelAgent('llama3');
    await setBudget(agent.uuid, { daily_usd: 10 });
    const before = callsOf('llama3');
    const { task_id } = await submitTask(t, user, agent.uuid);
    const failed = await waitForStatus(t, user, agent.uuid, task_id, 'failed');
    expect(failed.error).toEqual({
      code: 'MODEL_NOT_PRICED',
      message: 'Model llama3 has no price and a budget applies to this call: add it to TASKHOOK_MODEL_PRICES_FILE',
    });
    expect(callsOf('llama3')).toBe(before);
    const calls = (await call(t.app, 'GET', `/spotlight/calls?task_id=${task_id}`, { token: user.token })).json().calls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ source: 'runtime', status_code: 400, error: { code: 'model_not_priced' } });
  });

  it('housekeeping drops spend totals of windows past retention and of tasks that are gone, never current ones', async () => {
    const db = t.runtime.db;
    const ws = user.uuid;
    const old = new Date(Date.now() - 500 * 86_400_000).toISOString();
    const gone = '00000000-0000-4000-8000-00000000dead';
    const agent = '00000000-0000-4000-8000-0000000a9e47';
    await db.transaction((trx) =>
      budgetsRepo.addSpend(trx, {
        workspaceUuid: ws,
        createdAt: old,
        costNanos: 5,
        platformKeyUuid: null,
        agentUuid: agent,
        taskUuid: gone,
      }),
    );
    const rows = () =>
      db.kysely
        .selectFrom('spotlight_spend')
        .select(['scope', 'window_start'])
        .where('workspace_uuid', '=', ws)
        .execute();
    const before = await rows();
    expect(before.filter((r) => r.window_start === '' || r.window_start < old).length).toBeGreaterThanOrEqual(3);
    const result = await t.app.background.housekeep();
    expect(result.spotlightSpend).toBeGreaterThanOrEqual(3);
    const after = await rows();
    // What remains is current: this month's and day's totals, and tasks that exist.
    expect(after.every((r) => r.window_start === '' || r.window_start > old)).toBe(true);
    expect(after.length).toBe(before.length - 3);
    expect(after.filter((r) => r.scope === 'task').length).toBeGreaterThan(0);
  });
});
