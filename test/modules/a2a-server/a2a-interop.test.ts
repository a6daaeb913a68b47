import { type RunningWorker, runWorker, TaskFailure } from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configOf, loopback, runnerFor, taskOf } from '../../helpers/a2a-runs.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

/**
 * taskhook's own A2A client (the `a2a` runtime) against taskhook's A2A server: a task of one
 * service carried out by an agent of another, whose work an SDK worker does.
 */
describe.each(DATABASES)('the a2a runtime driving a taskhook agent on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    await t.app.listen({ port, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(() => t.close());

  async function servedAgent() {
    const user = await createUser(t);
    const agentId = (await createAgent(t, user)).uuid;
    workers.push(
      runWorker({
        baseUrl,
        apiKey: user.key,
        agentId,
        handler: async (task, ctx) => {
          if (task.message === 'fail') throw new TaskFailure('cannot do that', { code: 'NOPE' });
          if (task.message !== 'ask') return { summary: `done: ${task.message}`, findings: [] };
          const reply = task.messages.find((m, i) => i > 0 && m.role === 'user');
          if (!reply) return ctx.askForInput('Which file?');
          return {
            summary: `reviewed ${reply.content}`,
            findings: [{ file: reply.content, line: 1, severity: 'low', message: 'm' }],
          };
        },
        waitSeconds: 1,
        handleSignals: false,
        log: () => {},
      }),
    );
    const config = {
      ...configOf(`${baseUrl}/a2a/${agentId}/.well-known/agent-card.json`),
      headers: { 'x-service-api-key': user.key },
    };
    return runnerFor(loopback(), config);
  }

  it('completes a task with the served agent result', async () => {
    const runner = await servedAgent();
    expect(await runner.run(taskOf([['user', 'check this']]))).toEqual({
      kind: 'completed',
      result: { summary: 'done: check this', findings: [] },
    });
  });

  it("asks for input, and the person's reply continues the same remote task to completion", async () => {
    const runner = await servedAgent();
    const task = taskOf([['user', 'ask']]);
    expect(await runner.run(task)).toEqual({ kind: 'input_request', message: 'Which file?' });
    const answered = {
      ...task,
      messages: [
        ...task.messages,
        { role: 'agent' as const, content: 'Which file?', created_at: task.createdAt },
        { role: 'user' as const, content: 'a.ts', created_at: task.createdAt },
      ],
    };
    expect(await runner.run(answered)).toEqual({
      kind: 'completed',
      result: { summary: 'reviewed a.ts', findings: [{ file: 'a.ts', line: 1, severity: 'low', message: 'm' }] },
    });
  });

  it("reports the served agent's failure", async () => {
    const runner = await servedAgent();
    expect(await runner.run(taskOf([['user', 'fail']]))).toMatchObject({
      kind: 'failed',
      code: 'AGENT_ERROR',
      message: 'cannot do that',
    });
  });
});
