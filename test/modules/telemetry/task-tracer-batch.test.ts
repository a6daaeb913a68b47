import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FINAL_STATUSES } from '../../../src/modules/tasks/tasks-fns.js';
import { type ServiceSpan, taskSpan, taskTraceOf } from '../../../src/modules/telemetry/service-spans-fns.js';
import { createTaskTracer, TASK_SPAN_END_STATUSES } from '../../../src/modules/telemetry/task-tracer.js';

const spanOf = (agentUuid: string) => {
  const uuid = randomUUID();
  return taskSpan(taskTraceOf({ uuid }), {
    uuid,
    agentUuid,
    agentName: '',
    status: 'completed',
    createdAtMs: 1_000,
    endedAtMs: 2_000,
  });
};

describe('the task tracer writes one batch per workspace and turn of the event loop', () => {
  it('names the task spans of a batch with one lookup per agent, in order, every user apart', async () => {
    const lookups: string[] = [];
    const written: Array<{ userUuid: string; spans: ServiceSpan[] }> = [];
    const tracer = createTaskTracer({
      record: async (userUuid, spans) => {
        written.push({ userUuid, spans });
      },
      agentName: async (_userUuid, agentUuid) => {
        lookups.push(agentUuid);
        return agentUuid === 'agent-b' ? null : `name of ${agentUuid}`;
      },
      logger: { warn: () => undefined },
    });
    for (let i = 0; i < 300; i++) tracer.enqueue('user-1', [spanOf(i % 3 === 0 ? 'agent-b' : 'agent-a')]);
    tracer.enqueue('user-2', [spanOf('agent-c')]);
    await tracer.flush();

    expect(lookups.sort()).toEqual(['agent-a', 'agent-b', 'agent-c']);
    expect(written.map((w) => [w.userUuid, w.spans.length])).toEqual([
      ['user-1', 300],
      ['user-2', 1],
    ]);
    const names = written[0]?.spans.map((s) => s.name) ?? [];
    expect(names.slice(0, 4)).toEqual(['task agent-b', 'task name of agent-a', 'task name of agent-a', 'task agent-b']);
    expect(written[0]?.spans[1]?.attributes['gen_ai.agent.name']).toBe('name of agent-a');
    expect(written[1]?.spans[0]?.name).toBe('task name of agent-c');
  });
});

describe('the statuses that end a task span', () => {
  it('are the final statuses of the tasks room', () => {
    expect(TASK_SPAN_END_STATUSES).toEqual(FINAL_STATUSES);
  });
});
