import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type A2aRuntime, createA2aRuntime } from '../../../src/modules/a2a-client/a2a-client.js';
import type { PushOutcome, PushRuntime } from '../../../src/modules/runtimes/push-runtime.js';
import type { TaskRecord } from '../../../src/modules/tasks/tasks-record.js';
import { type A2aAgent, type A2aAgentOptions, startA2aAgent } from '../../helpers/a2a-agent.js';
import { manualClock } from '../../helpers/app.js';

const at = '2026-11-22T10:00:00.000Z';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** A claimed task as the dispatcher hands it to a push runtime. */
function taskOf(conversation: Array<['user' | 'agent', string]>, attempt = 1): TaskRecord {
  return {
    uuid: crypto.randomUUID(),
    agentUuid: crypto.randomUUID(),
    userUuid: crypto.randomUUID(),
    status: 'running',
    ready: false,
    priority: 5,
    message: conversation[0]?.[1] ?? '',
    messages: conversation.map(([role, content]) => ({ role, content, created_at: at })),
    metadata: {},
    callbackMode: 'poll',
    webhookUrl: null,
    timeoutSeconds: 3600,
    attempt,
    leaseId: crypto.randomUUID(),
    leaseSeconds: 60,
    leaseExpiresAt: at,
    workerId: null,
    progress: null,
    inputRequest: null,
    result: null,
    error: null,
    estimatedStart: at,
    createdAt: at,
    updatedAt: at,
    startedAt: at,
    timeoutAt: null,
    completedAt: null,
    failedAt: null,
    cancelledAt: null,
    seq: 1,
  };
}

const agents: A2aAgent[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function agentWith(options: A2aAgentOptions): Promise<A2aAgent> {
  const agent = await startA2aAgent(options);
  agents.push(agent);
  return agent;
}

/** A plain HTTP server answering every request with `status`, `headers` and `body`. */
async function answering(status: number, headers: Record<string, string>, body: string): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(status, headers).end(body));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`;
}

const loopback = (extra: Partial<Parameters<typeof createA2aRuntime>[0]> = {}) =>
  createA2aRuntime({ outbound: { allowPrivate: true }, pollIntervalMs: 20, ...extra });

interface Runner {
  runtime: PushRuntime<A2aRuntime>;
  config: A2aRuntime;
  /** Every state saved, in order. */
  saved: Array<Record<string, unknown> | null>;
  run(task: TaskRecord, opts?: { signal?: AbortSignal; state?: Record<string, unknown> | null }): Promise<PushOutcome>;
}

function runnerFor(runtime: PushRuntime<A2aRuntime>, config: A2aRuntime): Runner {
  const saved: Runner['saved'] = [];
  return {
    runtime,
    config,
    saved,
    run: (task, opts = {}) =>
      runtime.run({
        task,
        runtime: config,
        signal: opts.signal ?? new AbortController().signal,
        traceparent: TRACEPARENT,
        state: opts.state === undefined ? (saved.at(-1) ?? null) : opts.state,
        saveState: async (state) => {
          saved.push(state);
        },
      }),
  };
}

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
});

describe('the a2a runtime', () => {
  const configOf = (url: string): A2aRuntime => ({ type: 'a2a', agent_card_url: url });

  it('fails with DELIVERY_FAILED (retryable) when the card is unreachable, answers non-2xx, or redirects', async () => {
    const closed = await answering(200, {}, '{}');
    await new Promise((r) => servers.pop()?.close(r));
    const notFound = await answering(404, {}, 'no');
    const moved = await answering(302, { location: notFound }, '');
    const busy = await answering(503, { 'retry-after': '7' }, 'busy');
    const runtime = loopback();
    for (const [url, words, retryAfterMs] of [
      [closed, 'fetch failed', null],
      [notFound, 'HTTP 404', null],
      [moved, 'HTTP 302', null],
      [busy, 'HTTP 503', 7000],
    ] as const) {
      const outcome = await runnerFor(runtime, configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true, retryAfterMs });
      expect((outcome as { message: string }).message).toContain(words);
    }
  });

  it('fails with DELIVERY_FAILED when the card is not JSON or lists no usable interface', async () => {
    const agent = await agentWith({
      binding: 'JSONRPC',
      streaming: false,
      interfaces: [
        { url: 'http://127.0.0.1:1/rpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: 'http://127.0.0.1:1/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
    });
    const garbage = await answering(200, { 'content-type': 'application/json' }, '<html>');
    for (const [url, words] of [
      [agent.cardUrl, 'no JSONRPC or HTTP+JSON interface of protocol version 1.0'],
      [garbage, 'not valid JSON'],
    ] as const) {
      const outcome = await runnerFor(loopback(), configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toContain(words);
    }
    expect(agent.received).toEqual([]);
  });

  it('refuses a private address unless private URLs are allowed: nothing reaches the agent', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const guarded = createA2aRuntime({ outbound: { allowPrivate: false } });
    for (const url of [agent.cardUrl, agent.cardUrl.replace('127.0.0.1', 'localhost')]) {
      const outcome = await runnerFor(guarded, configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toMatch(/private/);
    }
    // A host name is refused when it resolves to a private address.
    const port = new URL(agent.cardUrl).port;
    const named = createA2aRuntime({
      outbound: { allowPrivate: false, lookup: async () => [{ address: '127.0.0.1', family: 4 }] },
    });
    const outcome = await runnerFor(named, configOf(`http://agent.example.com:${port}/card`)).run(
      taskOf([['user', 'text']]),
    );
    expect(outcome).toMatchObject({
      kind: 'failed',
      code: 'DELIVERY_FAILED',
      message: expect.stringMatching(/private/),
    });
    expect(agent.requests).toEqual([]);
  });

  it("checks the card's interface URL with the same guard before calling it", async () => {
    const target = await agentWith({ binding: 'JSONRPC', streaming: false });
    const agent = await agentWith({
      binding: 'JSONRPC',
      streaming: false,
      // The guard refuses schemes other than http(s) even where private addresses are allowed.
      interfaces: [
        { url: target.baseUrl.replace('http:', 'ftp:'), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
    });
    const outcome = await runnerFor(loopback(), configOf(agent.cardUrl)).run(taskOf([['user', 'text']]));
    expect(outcome).toMatchObject({
      kind: 'failed',
      code: 'DELIVERY_FAILED',
      message: expect.stringContaining('must use http or https'),
    });
    expect(target.requests).toEqual([]);
  });

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

  it.each([false, true])(
    'a JSON-RPC error answer (reply to a remote task the agent does not know, streaming %s) is DELIVERY_FAILED',
    async (streaming) => {
      const agent = await agentWith({ binding: 'JSONRPC', streaming });
      const runner = runnerFor(loopback(), configOf(agent.cardUrl));
      const state = {
        taskId: 'no-such-task',
        contextId: 'no-such-context',
        url: `${agent.baseUrl}/jsonrpc`,
        binding: 'JSONRPC',
        tenant: '',
        streaming,
        attempt: 1,
        phase: 'awaiting_input',
      };
      const task = taskOf([
        ['user', 'ask'],
        ['agent', 'Which branch?'],
        ['user', 'main'],
      ]);
      const outcome = await runner.run(task, { state });
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toMatch(/not found/i);
      expect(agent.received).toEqual([]);
    },
  );

  it('cancelled() without a remote task sends nothing', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const runtime = loopback();
    await runtime.cancelled?.({ task: taskOf([['user', 'x']]), runtime: configOf(agent.cardUrl), state: null });
    await runtime.cancelled?.({ task: taskOf([['user', 'x']]), runtime: configOf(agent.cardUrl), state: { other: 1 } });
    expect(agent.requests).toEqual([]);
  });
});
