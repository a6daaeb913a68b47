import { describe, expect, it, vi } from 'vitest';
import type { A2aRuntime } from '../../../../src/modules/runtimes/a2a/a2a-schema.js';
import { a2aServers, loopback, runnerFor, TRACEPARENT, taskOf } from '../../../helpers/a2a-runs.js';

const { agentWith } = a2aServers();

describe.each([
  { binding: 'JSONRPC', streaming: false },
  { binding: 'JSONRPC', streaming: true },
  { binding: 'HTTP+JSON', streaming: false },
  { binding: 'HTTP+JSON', streaming: true },
] as const)('against an @a2a-js/sdk agent over $binding (streaming $streaming)', ({ binding, streaming }) => {
  async function setup() {
    const agent = await agentWith({
      binding,
      streaming,
      extraInterfacesFirst: [{ protocolBinding: 'GRPC', protocolVersion: '1.0' }],
    });
    const config: A2aRuntime = {
      type: 'a2a',
      agent_card_url: agent.cardUrl,
      headers: { 'X-Api-Key': 'remote-secret' },
    };
    return { agent, runner: runnerFor(loopback(), config) };
  }

  it('completes with the text of the artifacts; every request carries the headers and A2A-Version 1.0', async () => {
    const { agent, runner } = await setup();
    const task = taskOf([
      ['user', 'text please'],
      ['user', 'second message'],
    ]);
    const outcome = await runner.run(task);
    expect(outcome).toEqual({
      kind: 'completed',
      result: { summary: 'echo: text please | second message', findings: [] },
    });

    expect(agent.received).toHaveLength(1);
    const sent = agent.received[0];
    expect(sent?.texts).toEqual(['text please', 'second message']);
    const send = agent.requests[1];
    if (binding === 'JSONRPC') {
      expect(send?.body).toMatchObject({ method: streaming ? 'SendStreamingMessage' : 'SendMessage' });
    } else {
      expect(send?.path).toBe(streaming ? '/rest/message:stream' : '/rest/message:send');
    }
    const wire = JSON.stringify(send?.body);
    expect(wire).toContain('"returnImmediately":true');
    expect(wire).toContain('"role":"ROLE_USER"');
    expect(wire).not.toContain('taskId');
    expect(agent.requests[0]?.path).toBe('/.well-known/agent-card.json');
    expect(agent.requests.length).toBeGreaterThan(1);
    for (const request of agent.requests) {
      expect(request.headers['a2a-version']).toBe('1.0');
      expect(request.headers['x-api-key']).toBe('remote-secret');
    }
    expect(agent.requests.slice(1).every((r) => r.headers.traceparent === TRACEPARENT)).toBe(true);
    expect(runner.saved).toEqual([
      {
        taskId: sent?.taskId,
        contextId: sent?.contextId,
        url: `${agent.baseUrl}${binding === 'JSONRPC' ? '/jsonrpc' : '/rest'}`,
        binding,
        tenant: '',
        streaming,
        attempt: 1,
        phase: 'following',
      },
    ]);
  });

  it('completes with the {summary, findings} of a data part', async () => {
    const { runner } = await setup();
    expect(await runner.run(taskOf([['user', 'data']]))).toEqual({
      kind: 'completed',
      result: { summary: 'two issues', findings: [{ file: 'a.ts', line: 3, severity: 'high', message: 'bug' }] },
    });
  });

  it('asks for input, then sends only the reply to the same remote task, which completes', async () => {
    const { agent, runner } = await setup();
    const first = taskOf([['user', 'ask']]);
    expect(await runner.run(first)).toEqual({ kind: 'input_request', message: 'Which branch?' });
    expect(runner.saved.at(-1)).toMatchObject({ phase: 'awaiting_input', attempt: 1 });

    const answered = {
      ...first,
      messages: [
        ...first.messages,
        ...taskOf([
          ['agent', 'Which branch?'],
          ['user', 'main'],
          ['user', 'quickly'],
        ]).messages,
      ],
    };
    const outcome = await runner.run(answered);
    expect(outcome).toEqual({ kind: 'completed', result: { summary: 'reply: main\nquickly', findings: [] } });
    expect(agent.received).toHaveLength(2);
    const [asked, reply] = agent.received;
    expect(reply).toMatchObject({
      taskId: asked?.taskId,
      contextId: asked?.contextId,
      continued: true,
      texts: ['main\nquickly'],
    });
    const sends = agent.requests.map((r) => JSON.stringify(r.body ?? null)).filter((b) => b.includes('"parts"'));
    expect(sends).toHaveLength(2);
    const wire = sends[1];
    expect(wire).toContain(`"taskId":"${asked?.taskId}"`);
    expect(wire).toContain(`"contextId":"${asked?.contextId}"`);
    expect(runner.saved.at(-1)).toMatchObject({ taskId: asked?.taskId, phase: 'following' });
  });

  it('a reply to a remote task that first re-sends itself (old question) waits for the state after the reply', async () => {
    const { agent, runner } = await setup();
    const first = taskOf([['user', 'ask-resend']]);
    expect(await runner.run(first)).toEqual({ kind: 'input_request', message: 'Which branch?' });
    const answered = {
      ...first,
      messages: [
        ...first.messages,
        ...taskOf([
          ['agent', 'Which branch?'],
          ['user', 'main'],
        ]).messages,
      ],
    };
    expect(await runner.run(answered)).toEqual({
      kind: 'completed',
      result: { summary: 'reply: main', findings: [] },
    });
    expect(agent.received.map((r) => r.continued)).toEqual([false, true]);
  });

  it.each([
    [
      'fail',
      { kind: 'failed', code: 'AGENT_ERROR', message: 'the tool crashed', retryable: false, retryAfterMs: null },
    ],
    [
      'reject',
      { kind: 'failed', code: 'AGENT_REJECTED', message: 'not my kind of work', retryable: false, retryAfterMs: null },
    ],
    ['self-cancel', { kind: 'cancelled', message: 'gave up' }],
    ['message', { kind: 'completed', result: { summary: 'plain answer', findings: [] } }],
  ])('maps "%s" to its outcome', async (script, expected) => {
    const { runner } = await setup();
    expect(await runner.run(taskOf([['user', script]]))).toEqual(expected);
  });

  it('a cancel aborts the run, and cancelled() forwards CancelTask to the remote task', async () => {
    const { agent, runner } = await setup();
    const task = taskOf([['user', 'wait']]);
    const controller = new AbortController();
    const running = runner.run(task, { signal: controller.signal });
    const remoteId = await agent.waiting();
    await vi.waitFor(() => expect(runner.saved).toHaveLength(1));
    controller.abort('cancel');
    expect(await running).toEqual({ kind: 'aborted' });
    expect(agent.cancelled).toEqual([]);
    await runner.runtime.cancelled?.({ task, runtime: runner.config, state: runner.saved.at(-1) ?? null });
    expect(agent.cancelled).toEqual([remoteId]);
  });

  it('a cancel while the first SendMessage is unanswered ends the run at once; the task it made is cancelled when named', async () => {
    const { agent, runner } = await setup();
    const task = taskOf([['user', 'wait']]);
    const controller = new AbortController();
    const open = agent.holdAnswers();
    const running = runner.run(task, { signal: controller.signal });
    // The remote has made its task, but its answer (the task's id) has not arrived.
    const remoteId = await agent.waiting();
    controller.abort('cancel');
    expect(await running).toEqual({ kind: 'aborted' });
    expect(runner.saved).toEqual([]);
    await runner.runtime.cancelled?.({ task, runtime: runner.config, state: null });
    expect(agent.cancelled).toEqual([]);

    open();
    await vi.waitFor(() => expect(agent.cancelled).toEqual([remoteId]));
    expect(runner.saved).toEqual([]);
    expect(agent.received).toHaveLength(1);
  });
});
