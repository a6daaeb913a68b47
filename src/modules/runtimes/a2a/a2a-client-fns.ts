import { randomUUID } from 'node:crypto';
import {
  type Artifact,
  type Message,
  type Part,
  Role,
  type SendMessageRequest,
  type StreamResponse,
  type Task,
  TaskState,
  type TaskStatus,
} from '@a2a-js/sdk';
import type { ConversationMessage } from '../../tasks/tasks-schemas.js';
import { findingsResultOf } from '../findings-fns.js';
import type { PushOutcome, TaskResultOut } from '../push-runtime.js';

export type A2aBinding = 'JSONRPC' | 'HTTP+JSON';

/** The interface of a card this client talks to. */
export interface A2aEndpoint {
  url: string;
  binding: A2aBinding;
  tenant: string;
  streaming: boolean;
}

/**
 * What a run remembers about the remote task of the current attempt: where it lives, and whether
 * it waits for the user's reply (`awaiting_input`) or is being followed (`following`).
 */
export interface RemoteTaskState extends A2aEndpoint {
  taskId: string;
  contextId: string;
  attempt: number;
  phase: 'following' | 'awaiting_input';
  /** The question the remote task asked last, so the run that carries the reply can tell it from a new state. */
  asked?: AskedQuestion;
}

/** What tells one input request of a remote task from another: its status message's id, else its time and text. */
export interface AskedQuestion {
  messageId: string;
  timestamp: string;
  text: string;
}

/** The question an interrupted status asks. */
export function questionOf(status: TaskStatus | undefined): AskedQuestion {
  return {
    messageId: status?.message?.messageId ?? '',
    timestamp: status?.timestamp ?? '',
    text: textsOf(status?.message?.parts).join('\n'),
  };
}

const INTERRUPTED: readonly TaskState[] = [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED];

/**
 * Whether `status` is still the question already answered (`asked`): an agent may show its task
 * as stored, old question included, before it takes the reply up, and that is no new answer. The
 * same message id is the same question; without ids, the same time and text are.
 */
export function isAnsweredQuestion(status: TaskStatus | undefined, asked: AskedQuestion | undefined): boolean {
  if (!asked || !status || !INTERRUPTED.includes(status.state)) return false;
  const now = questionOf(status);
  if (now.messageId !== '' || asked.messageId !== '') return now.messageId === asked.messageId;
  return now.timestamp === asked.timestamp && now.text === asked.text;
}

const isAsked = (v: unknown): v is AskedQuestion => {
  const a = v as Partial<AskedQuestion> | null;
  return (
    typeof a === 'object' &&
    a !== null &&
    typeof a.messageId === 'string' &&
    typeof a.timestamp === 'string' &&
    typeof a.text === 'string'
  );
};

/** A card that cannot be used; the message says why. */
export class CardError extends Error {}

const BINDINGS: readonly string[] = ['JSONRPC', 'HTTP+JSON'];

/**
 * The endpoint of a card (as JSON): the first `supportedInterfaces` entry whose binding is
 * JSON-RPC or HTTP+JSON and whose protocol version is 1.0, and whether the card offers streaming.
 * @throws CardError when the card is not an object or has no such interface.
 */
export function endpointOfCard(card: unknown): A2aEndpoint {
  if (typeof card !== 'object' || card === null || Array.isArray(card))
    throw new CardError('the agent card is not a JSON object');
  const { supportedInterfaces, capabilities } = card as { supportedInterfaces?: unknown; capabilities?: unknown };
  const list = Array.isArray(supportedInterfaces) ? (supportedInterfaces as Array<Record<string, unknown>>) : [];
  const usable = list.find(
    (i) =>
      typeof i === 'object' &&
      i !== null &&
      typeof i.url === 'string' &&
      typeof i.protocolBinding === 'string' &&
      BINDINGS.includes(i.protocolBinding) &&
      i.protocolVersion === '1.0',
  );
  if (!usable) throw new CardError('the agent card lists no JSONRPC or HTTP+JSON interface of protocol version 1.0');
  const streaming = (capabilities as { streaming?: unknown } | undefined)?.streaming === true;
  return {
    url: usable.url as string,
    binding: usable.protocolBinding as A2aBinding,
    tenant: typeof usable.tenant === 'string' ? usable.tenant : '',
    streaming,
  };
}

/** The remote task of `state`, or null when the state is not one this runtime saved. */
export function remoteOf(state: Record<string, unknown> | null): RemoteTaskState | null {
  const s = state ?? {};
  const ok =
    typeof s.taskId === 'string' &&
    typeof s.contextId === 'string' &&
    typeof s.url === 'string' &&
    typeof s.binding === 'string' &&
    BINDINGS.includes(s.binding) &&
    typeof s.tenant === 'string' &&
    typeof s.streaming === 'boolean' &&
    typeof s.attempt === 'number' &&
    (s.phase === 'following' || s.phase === 'awaiting_input');
  if (!ok) return null;
  const { asked, ...rest } = s as unknown as RemoteTaskState;
  return isAsked(asked) ? { ...rest, asked } : rest;
}

/** The user's reply to an input request: the messages after the last agent message, joined by "\n". */
export function replyOf(messages: ConversationMessage[]): string {
  const lastAgent = messages.map((m) => m.role).lastIndexOf('agent');
  return messages
    .slice(lastAgent + 1)
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
}

/**
 * What a run does with the remote task it finds in its state: send the user's reply to it, keep
 * following it (a run handed back at shutdown, same attempt), or start a new one (no state, an
 * earlier attempt's task, or nothing to reply).
 */
export function planOf(
  remote: RemoteTaskState | null,
  attempt: number,
  messages: ConversationMessage[],
): { kind: 'new' } | { kind: 'reply'; text: string } | { kind: 'resume' } {
  if (!remote || remote.attempt !== attempt) return { kind: 'new' };
  if (remote.phase === 'following') return { kind: 'resume' };
  const text = replyOf(messages);
  return text === '' ? { kind: 'new' } : { kind: 'reply', text };
}

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

/**
 * The `SendMessage` request of a run: the whole conversation as text parts for a new remote task,
 * or the reply as one text part for the remote task `to`. Answers as soon as the task exists.
 */
export function sendRequestOf(
  texts: string[],
  to: { taskId: string; contextId: string; tenant: string } | null,
  tenant: string,
): SendMessageRequest {
  return {
    tenant,
    message: {
      messageId: randomUUID(),
      contextId: to?.contextId ?? '',
      taskId: to?.taskId ?? '',
      role: Role.ROLE_USER,
      parts: texts.map(textPart),
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
    metadata: undefined,
  };
}

/** The text parts of parts, in order. */
export function textsOf(parts: Part[] | undefined): string[] {
  return (parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
}

/**
 * The result of a completed remote task: the first data part of the `{summary, findings}` shape in
 * its artifacts; else all text parts of all artifacts joined by "\n"; else the status message's text.
 */
export function resultOfTask(task: Pick<Task, 'artifacts' | 'status'>): TaskResultOut {
  for (const artifact of task.artifacts) {
    for (const part of artifact.parts) {
      const found = part.content?.$case === 'data' ? findingsResultOf(part.content.value) : null;
      if (found) return found;
    }
  }
  const texts = task.artifacts.flatMap((a) => textsOf(a.parts));
  const summary = texts.length > 0 ? texts.join('\n') : textsOf(task.status?.message?.parts).join('\n');
  return { summary, findings: [] };
}

/** A `Message` answer instead of a task: completed with its text parts as the summary. */
export function outcomeOfMessage(message: Message): PushOutcome {
  return { kind: 'completed', result: { summary: textsOf(message.parts).join('\n'), findings: [] } };
}

const failed = (code: string, message: string, retryable: boolean): PushOutcome => ({
  kind: 'failed',
  code,
  message,
  retryable,
  retryAfterMs: null,
});

/**
 * The outcome a remote task's state decides, or null while it is submitted or working (follow
 * on). A state this client does not know is an answer of no accepted shape.
 */
export function outcomeOfTask(task: Pick<Task, 'artifacts' | 'status'>): PushOutcome | null {
  const said = textsOf(task.status?.message?.parts).join('\n');
  switch (task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) {
    case TaskState.TASK_STATE_UNSPECIFIED:
    case TaskState.TASK_STATE_SUBMITTED:
    case TaskState.TASK_STATE_WORKING:
      return null;
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return { kind: 'input_request', message: said || 'input required' };
    case TaskState.TASK_STATE_COMPLETED:
      return { kind: 'completed', result: resultOfTask(task) };
    case TaskState.TASK_STATE_FAILED:
      return failed('AGENT_ERROR', said || 'The remote agent failed the task', false);
    case TaskState.TASK_STATE_REJECTED:
      return failed('AGENT_REJECTED', said || 'The remote agent rejected the task', false);
    case TaskState.TASK_STATE_CANCELED:
      return { kind: 'cancelled', message: said || 'The remote agent cancelled the task' };
    default:
      return failed('INVALID_AGENT_RESPONSE', 'The remote task is in a state A2A 1.0 does not define', false);
  }
}

/** A remote task as a stream shows it so far. */
export type TaskView = Pick<Task, 'id' | 'contextId' | 'status' | 'artifacts'>;

function withArtifact(artifacts: Artifact[], artifact: Artifact, append: boolean): Artifact[] {
  const i = artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
  if (i < 0) return [...artifacts, artifact];
  const merged = append ? { ...artifact, parts: [...(artifacts[i]?.parts ?? []), ...artifact.parts] } : artifact;
  return artifacts.map((a, j) => (j === i ? merged : a));
}

/**
 * The task after one stream event: a `task` replaces it, a status update sets its status, an
 * artifact update adds (or, with `append`, extends) an artifact. A `message` changes nothing.
 */
export function applyStreamEvent(view: TaskView | null, event: StreamResponse): TaskView | null {
  const p = event.payload;
  if (!p) return view;
  switch (p.$case) {
    case 'task':
      return { id: p.value.id, contextId: p.value.contextId, status: p.value.status, artifacts: p.value.artifacts };
    case 'statusUpdate': {
      const base = view ?? { id: p.value.taskId, contextId: p.value.contextId, status: undefined, artifacts: [] };
      return { ...base, status: p.value.status };
    }
    case 'artifactUpdate': {
      const base = view ?? { id: p.value.taskId, contextId: p.value.contextId, status: undefined, artifacts: [] };
      return p.value.artifact
        ? { ...base, artifacts: withArtifact(base.artifacts, p.value.artifact, p.value.append) }
        : base;
    }
    default:
      return view;
  }
}

/** A failure of delivery (card, connection, HTTP or JSON-RPC error): another attempt may help. */
export function deliveryFailed(message: string, retryAfterMs: number | null): PushOutcome {
  return { kind: 'failed', code: 'DELIVERY_FAILED', message: message.slice(0, 1000), retryable: true, retryAfterMs };
}
