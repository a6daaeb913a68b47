import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config.js';
import { createConnectionLimits } from '../../../src/http/connection-limits.js';
import { createRateLimiter } from '../../../src/http/rate-limit.js';
import { createMemoryStore } from '../../../src/http/rate-limit-stores.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createAccountsModule } from '../../../src/modules/accounts/accounts-module.js';
import { createAgentsModule } from '../../../src/modules/agents/agents-module.js';
import type { A2aRuntime } from '../../../src/modules/runtimes/a2a/a2a-schema.js';
import { registeredRuntimeSchemas } from '../../../src/modules/runtimes/adapters.js';
import type { PushRun, PushRuntime } from '../../../src/modules/runtimes/push-runtime.js';
import { createRuntimesModule } from '../../../src/modules/runtimes/runtimes-module.js';
import { runtimesRepo } from '../../../src/modules/runtimes/runtimes-repo.js';
import { createTasksModule } from '../../../src/modules/tasks/tasks-module.js';
import { createLogger, openProcessDeps, type ProcessDeps } from '../../../src/process-deps.js';
import { testConfig } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { actingAs } from '../../helpers/factories.js';

/*
 * A push runtime plugged into the dispatcher through the registry (`extra`), with the production
 * modules over real storage and no HTTP app (whose own dispatcher would compete for the tasks):
 * the state a run saves reaches the next run of the task, and its row goes when the task finishes.
 */
describe.each(DATABASES)('push runtime state between runs on $name', (shared) => {
  let runtime: ProcessDeps;
  let drop: () => Promise<void> = async () => undefined;
  let modules: ReturnType<typeof assemble>;
  const runs: Array<Pick<PushRun<A2aRuntime>, 'state' | 'runtime'> & { messages: string[] }> = [];

  // Asks once and remembers a remote id; the next run continues it.
  const remote: PushRuntime<A2aRuntime> = {
    async run(run) {
      runs.push({ state: run.state, runtime: run.runtime, messages: run.task.messages.map((m) => m.content) });
      if (!run.state) {
        await run.saveState({ remote_task: 'r-1' });
        return { kind: 'input_request', message: 'Which branch?' };
      }
      return { kind: 'completed', result: { summary: `continued ${String(run.state.remote_task)}`, findings: [] } };
    },
  };

  function assemble(config: Config, rt: ProcessDeps) {
    const box = createSecretBox(rt.secrets.encryptionKey);
    const accounts = createAccountsModule({ config, runtime: rt, box });
    const events = createEventHub();
    const agents = createAgentsModule({
      runtime: rt,
      box,
      runtimeSchemas: registeredRuntimeSchemas(),
      checkRuntime: async () => undefined,
      cacheMs: 0,
      events,
    });
    const notifier = createNotifier({ db: rt.db, log: rt.logger });
    const tasks = createTasksModule({
      config,
      runtime: rt,
      agents,
      events,
      connections: createConnectionLimits(),
      credentials: accounts.credentials,
      notifier,
      rateLimit: createRateLimiter({ limit: 1000, store: createMemoryStore(), clock: rt.clock, storeTimeoutMs: 100 }),
    });
    const runtimes = createRuntimesModule({
      config,
      runtime: rt,
      box,
      tasks,
      notifier,
      events,
      accounts: accounts.service,
      spotlight: {
        chatCompletions: () => Promise.reject(new Error('no model runs in this test')),
      },
      extra: { a2a: remote as PushRuntime<never> },
    });
    return { accounts, agents, tasks, runtimes, notifier };
  }

  beforeAll(async () => {
    const own = await ownDatabase(shared);
    drop = own.drop;
    const config = testConfig(own.database);
    runtime = await openProcessDeps(config, { logger: createLogger(config) });
    modules = assemble(config, runtime);
  });
  afterAll(async () => {
    await modules?.notifier.close();
    await runtime?.close();
    await drop();
  });

  it('hands the saved state to the next run, with header values in clear, and drops it when the task finishes', async () => {
    const user = await modules.accounts.service.createUser({
      email: `state-${randomUUID()}@example.test`,
      password: `pw-${randomUUID()}`,
      verified: true,
      agentsEnabled: true,
    });
    const card = { type: 'a2a' as const, agent_card_url: 'https://93.184.216.34/card', headers: { 'X-Key': 'k-1' } };
    const agent = await modules.agents.service.create(actingAs(user), { name: 'remote', runtime: card });
    const { response } = await modules.tasks.submitter.submit(user.uuid, agent.uuid, { message: 'review' });
    const ref = { workspaceUuid: user.uuid, agentUuid: agent.uuid, taskUuid: response.task_id };

    expect(await modules.runtimes.dispatcher.runOnce()).toBe(1);
    expect((await modules.tasks.service.get(ref)).status).toBe('awaiting_input');
    expect(await runtimesRepo.findRun(runtime.db.kysely, ref.taskUuid)).toEqual({
      state: { remote_task: 'r-1' },
      acceptedLeaseId: null,
    });

    await modules.tasks.service.message(ref, 'main');
    expect(await modules.runtimes.dispatcher.runOnce()).toBe(1);
    const done = await modules.tasks.service.get(ref);
    expect(done.result).toEqual({ summary: 'continued r-1', findings: [] });
    expect(runs).toEqual([
      { state: null, runtime: card, messages: ['review'] },
      { state: { remote_task: 'r-1' }, runtime: card, messages: ['review', 'Which branch?', 'main'] },
    ]);
    expect(await runtimesRepo.findRun(runtime.db.kysely, ref.taskUuid)).toBeNull();
  });
});
