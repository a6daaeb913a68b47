import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { createA2aRuntime } from '../../src/modules/runtimes/a2a/a2a-runtime.js';
import type { A2aRuntime } from '../../src/modules/runtimes/a2a/a2a-schema.js';
import type { PushOutcome, PushRuntime } from '../../src/modules/runtimes/push-runtime.js';
import type { TaskRecord } from '../../src/modules/tasks/tasks-record.js';
import { type A2aAgent, type A2aAgentOptions, startA2aAgent } from './a2a-agent.js';

const at = '2026-11-22T10:00:00.000Z';
export const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** A claimed task as the dispatcher hands it to a push runtime. */
export function taskOf(conversation: Array<['user' | 'agent', string]>, attempt = 1): TaskRecord {
  return {
    uuid: crypto.randomUUID(),
    agentUuid: crypto.randomUUID(),
    workspaceUuid: crypto.randomUUID(),
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
    concurrencyKey: null,
    maxAttempts: 3,
    backoff: null,
    lastError: null,
    availableAt: at,
    rerunOf: null,
    parentTaskId: null,
  };
}

/** An a2a runtime that may call loopback (the agents of these tests), polling every 20 ms. */
export const loopback = (extra: Partial<Parameters<typeof createA2aRuntime>[0]> = {}) =>
  createA2aRuntime({ outbound: { allowPrivate: true }, pollIntervalMs: 20, ...extra });

export const configOf = (url: string): A2aRuntime => ({ type: 'a2a', agent_card_url: url });

/** Runs tasks of one agent through a runtime the way the runner does, keeping every state saved. */
export interface Runner {
  runtime: PushRuntime<A2aRuntime>;
  config: A2aRuntime;
  /** Every state saved, in order. */
  saved: Array<Record<string, unknown> | null>;
  /** One run; the state is the last saved unless given. */
  run(task: TaskRecord, opts?: { signal?: AbortSignal; state?: Record<string, unknown> | null }): Promise<PushOutcome>;
}

export function runnerFor(runtime: PushRuntime<A2aRuntime>, config: A2aRuntime): Runner {
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

/**
 * Loopback servers of one test file, closed after each test: A2A agents, and plain servers that
 * answer every request the same way (for cards that fail).
 */
export function a2aServers() {
  const agents: A2aAgent[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });
  return {
    async agentWith(options: A2aAgentOptions): Promise<A2aAgent> {
      const agent = await startA2aAgent(options);
      agents.push(agent);
      return agent;
    },
    /** The card URL of a server answering every request with `status`, `headers` and `body`. */
    async answering(status: number, headers: Record<string, string>, body: string): Promise<string> {
      const server = createServer((_req, res) => res.writeHead(status, headers).end(body));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`;
    },
    /** The URL of a port nothing listens on any more. */
    async closedPort(): Promise<string> {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`;
      await new Promise((r) => server.close(r));
      return url;
    },
  };
}
