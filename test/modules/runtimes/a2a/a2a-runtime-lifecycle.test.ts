import { describe, expect, it, vi } from 'vitest';
import { a2aServers, configOf, loopback, runnerFor, taskOf } from '../../../helpers/a2a-runs.js';
import { manualClock } from '../../../helpers/app.js';

const { agentWith } = a2aServers();

describe('the a2a runtime across runs', () => {
  it('uses a card for 5 minutes per URL and headers', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const clock = manualClock();
    const runtime = loopback({ clock });
    const cardFetches = () => agent.requests.filter((r) => r.path === '/.well-known/agent-card.json').length;
    const run = (headers?: Record<string, string>) =>
      runnerFor(runtime, { type: 'a2a', agent_card_url: agent.cardUrl, headers }).run(taskOf([['user', 'text']]));

    await run();
    await run();
    expect(cardFetches()).toBe(1);
    await run({ authorization: 'Bearer other' });
    expect(cardFetches()).toBe(2);
    clock.advance(5 * 60_000 - 1);
    await run();
    expect(cardFetches()).toBe(2);
    clock.advance(1);
    await run();
    expect(cardFetches()).toBe(3);
  });

  it('a run handed back at shutdown resumes following the same remote task without sending again', async () => {
    const agent = await agentWith({ binding: 'HTTP+JSON', streaming: true });
    const runner = runnerFor(loopback(), configOf(agent.cardUrl));
    const task = taskOf([['user', 'wait']]);
    const controller = new AbortController();
    const first = runner.run(task, { signal: controller.signal });
    const remoteId = await agent.waiting();
    await vi.waitFor(() => expect(runner.saved).toHaveLength(1));
    controller.abort('shutdown');
    expect(await first).toEqual({ kind: 'aborted' });

    const resumed = runner.run(task);
    await vi.waitFor(() => expect(agent.requests.filter((r) => r.method === 'GET').length).toBeGreaterThan(1));
    agent.release(remoteId);
    expect(await resumed).toEqual({ kind: 'cancelled', message: 'released' });
    expect(agent.received).toHaveLength(1);
    expect(agent.cancelled).toEqual([]);
  });

  it('a stream that breaks after the remote took the task is followed by GetTask polling', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: true });
    const runner = runnerFor(loopback(), configOf(agent.cardUrl));
    const running = runner.run(taskOf([['user', 'wait']]));
    const remoteId = await agent.waiting();
    await vi.waitFor(() => expect(runner.saved).toHaveLength(1));
    agent.dropConnections();
    const polls = () => agent.requests.filter((r) => (r.body as { method?: string })?.method === 'GetTask');
    await vi.waitFor(() => expect(polls().length).toBeGreaterThan(0));
    agent.release(remoteId);
    expect(await running).toEqual({ kind: 'cancelled', message: 'released' });
    expect(agent.received).toHaveLength(1);
  });

  it('a later attempt starts a new remote task and cancels the one its predecessor left running', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const runner = runnerFor(loopback(), configOf(agent.cardUrl));
    const controller = new AbortController();
    const first = runner.run(taskOf([['user', 'wait']]), { signal: controller.signal });
    const leftOver = await agent.waiting();
    await vi.waitFor(() => expect(runner.saved).toHaveLength(1));
    controller.abort('shutdown');
    await first;

    const retried = await runner.run(taskOf([['user', 'text again']], 2));
    expect(retried).toMatchObject({ kind: 'completed', result: { summary: 'echo: text again' } });
    await vi.waitFor(() => expect(agent.cancelled).toEqual([leftOver]));
    expect(runner.saved.at(-1)).toMatchObject({ attempt: 2, phase: 'following' });
    expect(agent.received).toHaveLength(2);
  });

  it('cancelled() without a remote task sends nothing', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const runtime = loopback();
    await runtime.cancelled?.({ task: taskOf([['user', 'x']]), runtime: configOf(agent.cardUrl), state: null });
    await runtime.cancelled?.({ task: taskOf([['user', 'x']]), runtime: configOf(agent.cardUrl), state: { other: 1 } });
    expect(agent.requests).toEqual([]);
  });
});
