import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Runtime } from '../../runtime.js';
import { agentsRepo } from '../agents/agents-repo.js';
import { createModelRuntime } from '../model-runtime/model-runtime.js';
import type { SpotlightService } from '../spotlight/spotlight-service.js';
import { tasksRepo } from '../tasks/tasks-repo.js';
import type { TaskWriter } from '../tasks/tasks-writer.js';
import { createDispatcher } from './dispatcher.js';
import { createTaskRunner } from './task-runner.js';

/**
 * Wires push runtimes: the dispatcher that hands queued tasks of `openai` agents to the model
 * runtime, started with the server and stopped (calls in flight handed back) when it closes.
 */
export function createRuntimesModule(deps: {
  config: Config;
  runtime: Runtime;
  writer: TaskWriter;
  spotlight: Pick<SpotlightService, 'chatCompletions'>;
}) {
  const { runtime } = deps;
  const model = createModelRuntime({ spotlight: deps.spotlight, now: () => runtime.clock.now() });
  let wakeAfter: (delayMs: number) => void = () => undefined;
  const runner = createTaskRunner({
    db: runtime.db,
    repo: tasksRepo,
    writer: deps.writer,
    clock: runtime.clock,
    model,
    log: runtime.logger,
    onRetry: (delayMs) => wakeAfter(delayMs),
  });
  const dispatcher = createDispatcher({
    db: runtime.db,
    tasksRepo,
    agentsRepo,
    writer: deps.writer,
    runner,
    clock: runtime.clock,
    intervalMs: deps.config.sweepIntervalMs,
    log: runtime.logger,
  });
  wakeAfter = dispatcher.wakeAfter;

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => dispatcher.start());
    app.addHook('preClose', async () => dispatcher.stop());
  }
  return { dispatcher, routes };
}
