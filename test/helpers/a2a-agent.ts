import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  AgentCard,
  type Artifact,
  type Message,
  type Part,
  Role,
  type SendMessageRequest,
  TaskState,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

/**
 * A remote A2A agent on loopback, built with `@a2a-js/sdk`'s own server (JSON-RPC and HTTP+JSON),
 * whose behaviour the first user message picks:
 *
 * - `text …` completes with a text artifact `echo: <the whole message>`;
 * - `data` completes with a data part `{summary, findings}` (plus a text part);
 * - `ask` asks for input (`Which branch?`), then completes with `reply: <the reply's text>`;
 * - `ask-resend` as `ask`, but on the reply it first re-sends the task as stored (still
 *   input-required with the old question), pauses, then works on the reply;
 * - `fail`, `reject`, `self-cancel` end in that state with a status message;
 * - `message` answers with a Message instead of a task;
 * - `wait` stays working until cancelled.
 */
export interface A2aAgentOptions {
  binding: 'JSONRPC' | 'HTTP+JSON';
  streaming: boolean;
  /** Interfaces listed before the usable one (e.g. gRPC, or version 0.3). */
  extraInterfacesFirst?: Array<{ protocolBinding: string; protocolVersion: string }>;
  /** Replace the card's interfaces entirely. */
  interfaces?: Array<{ url: string; protocolBinding: string; protocolVersion: string }>;
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON body as sent. */
  body: unknown;
}

export interface A2aAgent {
  /** The card's full URL. */
  cardUrl: string;
  baseUrl: string;
  /** Every HTTP request the server saw, in order. */
  requests: SeenRequest[];
  /** Messages the executor received: the text of their parts, and the request as sent. */
  received: Array<{
    taskId: string;
    contextId: string;
    texts: string[];
    continued: boolean;
    request: SendMessageRequest;
  }>;
  /** Task ids whose cancel reached the executor. */
  cancelled: string[];
  /** Resolves once a task of the `wait` kind is working (its id). */
  waiting: () => Promise<string>;
  /** Closes every open connection (a stream in flight breaks); the server goes on listening. */
  dropConnections: () => void;
  /** Ends a waiting task as the agent's own decision (it becomes canceled, `released`). */
  release: (taskId: string) => void;
  /**
   * Holds the answers of the POST requests that arrive from now on (the executor still runs):
   * nothing of them goes out until the returned function is called.
   */
  holdAnswers: () => () => void;
  close(): Promise<void>;
}

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const agentMessage = (taskId: string, contextId: string, value: string): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [text(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const textsOf = (m: Message): string[] =>
  m.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

export async function startA2aAgent(options: A2aAgentOptions): Promise<A2aAgent> {
  const requests: SeenRequest[] = [];
  const received: A2aAgent['received'] = [];
  const cancelled: string[] = [];
  const waiters: Array<(id: string) => void> = [];
  const working: string[] = [];
  const cancelHooks = new Map<string, () => void>();
  const contexts = new Map<string, string>();
  const released = new Set<string>();

  const status = (bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, message?: string) =>
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state,
          message: message === undefined ? undefined : agentMessage(taskId, contextId, message),
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
  const artifact = (bus: ExecutionEventBus, taskId: string, contextId: string, parts: Part[]) => {
    const a: Artifact = {
      artifactId: randomUUID(),
      name: 'result',
      description: '',
      parts,
      metadata: undefined,
      extensions: [],
    };
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: a,
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
  };

  const executor: AgentExecutor = {
    async execute(ctx: RequestContext, bus: ExecutionEventBus) {
      const { taskId, contextId } = ctx;
      const texts = textsOf(ctx.userMessage);
      received.push({ taskId, contextId, texts, continued: ctx.task !== undefined, request: ctx.request });
      contexts.set(taskId, contextId);
      const first = ctx.task ? (textsOf(ctx.task.history[0] ?? ctx.userMessage)[0] ?? '') : (texts[0] ?? '');
      if (first === 'message') {
        bus.publish(AgentEvent.message({ ...agentMessage('', contextId, 'plain answer'), taskId: '' }));
        bus.finished();
        return;
      }
      if (first === 'ask-resend' && ctx.task) {
        // A legitimate first event of a continued task: the task as stored, old question included.
        bus.publish(AgentEvent.task(ctx.task));
        // Long enough for a client to look again while the old state is all there is.
        await new Promise((resolve) => setTimeout(resolve, 100));
      } else {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
            artifacts: ctx.task?.artifacts ?? [],
            history: [...(ctx.task?.history ?? []), ctx.userMessage],
            metadata: undefined,
          }),
        );
      }
      status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
      if (first.startsWith('text')) {
        artifact(bus, taskId, contextId, [text(`echo: ${texts.join(' | ')}`)]);
        status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, 'all done');
      } else if (first === 'data') {
        const result = {
          summary: 'two issues',
          findings: [{ file: 'a.ts', line: 3, severity: 'high', message: 'bug', extra: 1 }],
          other: true,
        };
        artifact(bus, taskId, contextId, [
          text('human text'),
          {
            content: { $case: 'data', value: result },
            metadata: undefined,
            filename: '',
            mediaType: 'application/json',
          },
        ]);
        status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
      } else if ((first === 'ask' || first === 'ask-resend') && !ctx.task) {
        status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch?');
      } else if (first === 'ask' || first === 'ask-resend') {
        artifact(bus, taskId, contextId, [text(`reply: ${texts.join(' | ')}`)]);
        status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
      } else if (first === 'fail') {
        status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, 'the tool crashed');
      } else if (first === 'reject') {
        status(bus, taskId, contextId, TaskState.TASK_STATE_REJECTED, 'not my kind of work');
      } else if (first === 'self-cancel') {
        status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, 'gave up');
      } else if (first === 'wait') {
        await new Promise<void>((resolve) => {
          cancelHooks.set(taskId, resolve);
          working.push(taskId);
          for (const w of waiters.splice(0)) w(taskId);
        });
        status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, released.has(taskId) ? 'released' : undefined);
      } else {
        status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, `unknown script ${first}`);
      }
      bus.finished();
    },
    async cancelTask(taskId: string, bus: ExecutionEventBus) {
      cancelled.push(taskId);
      const resume = cancelHooks.get(taskId);
      // A task still executing publishes its own end; an interrupted one is ended here.
      if (resume) resume();
      else status(bus, taskId, contexts.get(taskId) ?? '', TaskState.TASK_STATE_CANCELED);
    },
  };

  let held: Promise<void> | null = null;
  const app = express();
  app.use((req, res, next) => {
    const gate = req.method === 'POST' ? held : null;
    if (gate) {
      // Output calls are queued until the gate opens, then the real methods are put back and
      // the queue replayed in order (the real `end` calls `writeHead` itself: it must be the real one).
      const out = res as unknown as Record<string, (...args: unknown[]) => unknown>;
      const names = ['writeHead', 'flushHeaders', 'write', 'end'] as const;
      const originals = names.map((name) => [name, out[name]] as const);
      const queue: Array<[string, unknown[]]> = [];
      for (const name of names) {
        out[name] = (...args: unknown[]) => {
          queue.push([name, args]);
          return name === 'write' ? true : res;
        };
      }
      void gate.then(() => {
        for (const [name, original] of originals) out[name] = original as (...args: unknown[]) => unknown;
        for (const [name, args] of queue) out[name]?.apply(res, args);
      });
    }
    next();
  });
  app.use((req, _res, next) => {
    const seen: SeenRequest = { method: req.method, path: req.path, headers: { ...req.headers }, body: undefined };
    requests.push(seen);
    // A copy of the body as it came over the wire (the SDK's own parser reads the same chunks).
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      seen.body = raw === '' ? undefined : JSON.parse(raw);
    });
    next();
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const endpoint = options.binding === 'JSONRPC' ? `${baseUrl}/jsonrpc` : `${baseUrl}/rest`;
  const card = AgentCard.fromJSON({
    name: 'remote',
    description: 'a remote test agent',
    version: '1.0.0',
    supportedInterfaces: options.interfaces ?? [
      ...(options.extraInterfacesFirst ?? []).map((i) => ({ url: endpoint, ...i })),
      { url: endpoint, protocolBinding: options.binding, protocolVersion: '1.0' },
    ],
    capabilities: { streaming: options.streaming, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'all', name: 'all', description: 'everything', tags: ['test'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

  return {
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    baseUrl,
    requests,
    received,
    cancelled,
    waiting: () =>
      new Promise((resolve) => {
        const first = working.shift();
        if (first) resolve(first);
        else waiters.push(resolve);
      }),
    dropConnections: () => server.closeAllConnections(),
    holdAnswers: () => {
      let open = () => {};
      held = new Promise<void>((resolve) => {
        open = resolve;
      });
      return () => {
        held = null;
        open();
      };
    },
    release: (taskId) => {
      released.add(taskId);
      cancelHooks.get(taskId)?.();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const resume of cancelHooks.values()) resume();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
