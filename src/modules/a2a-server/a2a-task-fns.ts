import { isSettled, type TaskStatus } from '../tasks/tasks-fns.js';
import type { TaskView } from '../tasks/tasks-schemas.js';

/** A2A task states, as ProtoJSON spells them. */
export const A2A_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;
export type TaskState = (typeof A2A_STATES)[number];

const STATE_OF: Record<TaskStatus, TaskState> = {
  queued: 'TASK_STATE_SUBMITTED',
  running: 'TASK_STATE_WORKING',
  awaiting_input: 'TASK_STATE_INPUT_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  cancelled: 'TASK_STATE_CANCELED',
};

/** The task status a state filter of ListTasks selects; null when no taskhook task is ever in it. */
export function statusOfState(state: TaskState): TaskStatus | null {
  const found = (Object.keys(STATE_OF) as TaskStatus[]).find((s) => STATE_OF[s] === state);
  return found ?? null;
}

/** States after which a stream ends: final ones, and input-required (the client must answer). */
export function endsStream(status: TaskStatus): boolean {
  return isSettled(status);
}

export type Part = { text: string } | { data: unknown; mediaType: string };

export interface A2aMessage {
  messageId: string;
  contextId: string;
  taskId: string;
  role: 'ROLE_USER' | 'ROLE_AGENT';
  parts: Part[];
}

export interface A2aStatus {
  state: TaskState;
  message?: A2aMessage;
  timestamp: string;
}

export interface A2aArtifact {
  artifactId: string;
  name: string;
  parts: Part[];
}

export interface A2aTask {
  id: string;
  contextId: string;
  status: A2aStatus;
  history: A2aMessage[];
  artifacts?: A2aArtifact[];
  metadata: Record<string, unknown>;
}

/** What the A2A view of a task needs besides the task itself. */
export interface A2aExtras {
  /** The contextId of a task created over A2A; other tasks use their task id. */
  contextId: string | undefined;
  /** The senders' messageIds by position in the conversation, for messages that came over A2A. */
  messageIds: ReadonlyMap<number, string>;
}

/** A stable id for a conversation message that did not come over A2A (or an agent's). */
export const ownMessageId = (taskId: string, position: number) => `${taskId}-m${position}`;

/**
 * When the task last changed state, as far as its body tells: the finishing time, the time input
 * was requested, the latest user reply after it (running again), the first start, or its creation.
 */
export function stateTimestamp(view: TaskView): string {
  switch (view.status) {
    case 'completed':
      return view.completed_at ?? view.created_at;
    case 'failed':
      return view.failed_at ?? view.created_at;
    case 'cancelled':
      return view.cancelled_at ?? view.created_at;
    case 'awaiting_input':
      return view.input_request?.requested_at ?? view.created_at;
    case 'running': {
      const lastAgent = view.messages.map((m) => m.role).lastIndexOf('agent');
      const reply = lastAgent >= 0 ? view.messages[lastAgent + 1] : undefined;
      const started = view.started_at ?? view.created_at;
      return reply && reply.created_at > started ? reply.created_at : started;
    }
    case 'queued':
      return view.created_at;
  }
}

function agentMessage(view: TaskView, contextId: string, messageId: string, text: string): A2aMessage {
  return { messageId, contextId, taskId: view.task_id, role: 'ROLE_AGENT', parts: [{ text }] };
}

/** The A2A status of a task: its state, the message that goes with it, and when it began. */
export function taskStatus(view: TaskView, contextId: string): A2aStatus {
  const status: A2aStatus = { state: STATE_OF[view.status], timestamp: stateTimestamp(view) };
  if (view.status === 'awaiting_input' && view.input_request) {
    const position = view.messages.map((m) => m.role).lastIndexOf('agent');
    const id = ownMessageId(view.task_id, position < 0 ? view.messages.length : position);
    status.message = agentMessage(view, contextId, id, view.input_request.message);
  } else if (view.status === 'failed' && view.error) {
    status.message = agentMessage(view, contextId, `${view.task_id}-error`, view.error.message);
  }
  return status;
}

/** The result of a completed task as its one artifact: the summary as text, the whole result as data. */
export function resultArtifact(view: TaskView): A2aArtifact | undefined {
  if (view.status !== 'completed' || !view.result) return undefined;
  return {
    artifactId: 'result',
    name: 'result',
    parts: [{ text: view.result.summary }, { data: view.result, mediaType: 'application/json' }],
  };
}

/**
 * A taskhook task as an A2A Task. `historyLength`: absent → the whole conversation, 0 → none,
 * N → the last N messages.
 */
export function toA2aTask(view: TaskView, extras: A2aExtras, historyLength?: number): A2aTask {
  const contextId = extras.contextId ?? view.task_id;
  const all = view.messages.map(
    (m, i): A2aMessage => ({
      messageId: extras.messageIds.get(i) ?? ownMessageId(view.task_id, i),
      contextId,
      taskId: view.task_id,
      role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
      parts: [{ text: m.content }],
    }),
  );
  const history = historyLength === undefined ? all : historyLength === 0 ? [] : all.slice(-historyLength);
  const task: A2aTask = {
    id: view.task_id,
    contextId,
    status: taskStatus(view, contextId),
    history,
    metadata: view.metadata,
  };
  const artifact = resultArtifact(view);
  if (artifact) task.artifacts = [artifact];
  return task;
}

export type StreamResponse =
  | { task: A2aTask }
  | { statusUpdate: { taskId: string; contextId: string; status: A2aStatus } }
  | { artifactUpdate: { taskId: string; contextId: string; artifact: A2aArtifact; lastChunk: true } };

/**
 * What a stream sends for the change from `before` to `after`: a status update per state change
 * (on completion the result artifact first), and a working update with the current step when only
 * the progress moved. Other changes (a message appended while running) send nothing.
 */
export function streamUpdates(before: TaskView, after: TaskView, contextId: string): StreamResponse[] {
  const taskId = after.task_id;
  if (before.status !== after.status) {
    const out: StreamResponse[] = [];
    const artifact = resultArtifact(after);
    if (artifact) out.push({ artifactUpdate: { taskId, contextId, artifact, lastChunk: true } });
    out.push({ statusUpdate: { taskId, contextId, status: taskStatus(after, contextId) } });
    return out;
  }
  const step = after.progress?.current_step;
  if (after.status === 'running' && step && JSON.stringify(before.progress) !== JSON.stringify(after.progress)) {
    const status: A2aStatus = {
      state: 'TASK_STATE_WORKING',
      timestamp: stateTimestamp(after),
      message: agentMessage(after, contextId, `${taskId}-progress-${after.progress?.steps_completed ?? 0}`, step),
    };
    return [{ statusUpdate: { taskId, contextId, status } }];
  }
  return [];
}

/** The agent card of a taskhook agent (ProtoJSON field names). */
export function agentCard(agent: { uuid: string; name: string; description: string | null }, baseUrl: string) {
  return {
    name: agent.name,
    description: agent.description ?? '',
    version: '1.0.0',
    // JSON-RPC first: it stays the preferred interface.
    supportedInterfaces: [
      { url: `${baseUrl}/a2a/${agent.uuid}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${baseUrl}/a2a/${agent.uuid}`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    provider: { organization: 'taskhook', url: baseUrl },
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
    securitySchemes: {
      platform_key: { apiKeySecurityScheme: { location: 'header', name: 'x-service-api-key' } },
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } },
    },
    securityRequirements: [{ schemes: { platform_key: { list: [] } } }, { schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'task', name: agent.name, description: agent.description || agent.name, tags: ['taskhook'] }],
  };
}

/** A task's concurrency key from an A2A message's `metadata.concurrency_key`: a string of 1–255 characters, else none. */
export function concurrencyKeyOf(metadata: Record<string, unknown> | undefined): string | null {
  const key = metadata?.concurrency_key;
  // Counted in characters (code points), as request validation counts a submitted key.
  return typeof key === 'string' && key.length >= 1 && [...key].length <= 255 ? key : null;
}
