import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../lib/principal.js';
import { canonicalJson } from '../tasks/tasks-fns.js';
import type { TaskRecord } from '../tasks/tasks-record.js';

/** A `requestState` holds for this long after it was issued. */
export const REQUEST_STATE_TTL_MS = 3_600_000;

/** What a `requestState` binds: who asked, which call, which task and question, until when. */
export interface RequestState {
  workspaceUuid: string;
  principalId: string;
  tool: string;
  argumentsHash: string;
  taskUuid: string;
  /** The task's number of messages while it awaits the question (`question-<n>`). */
  position: number;
  expiresAtMs: number;
}

/** The key request states are signed with, derived from TASKHOOK_ENCRYPTION_KEY (every instance has it). */
export function requestStateKey(encryptionKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', encryptionKey, 'taskhook', 'mcp-request-state-v1', 32));
}

/** The person a state is bound to: the user of a session (or OAuth token), else the platform key. */
export const principalIdOf = (p: Pick<Principal, 'via' | 'userUuid' | 'credentialUuid'>) =>
  p.via === 'platform_key' ? `key:${p.credentialUuid}` : `user:${p.userUuid}`;

/** SHA-256 of the call's arguments as canonical JSON (keys sorted at every depth). */
export const argumentsHash = (args: unknown) =>
  createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('base64url');

/** `s1.<payload>.<hmac>`, base64url, well under 4096 characters. */
export function signRequestState(key: Buffer, state: RequestState): string {
  const payload = Buffer.from(
    JSON.stringify([
      state.workspaceUuid,
      state.principalId,
      state.tool,
      state.argumentsHash,
      state.taskUuid,
      state.position,
      state.expiresAtMs,
    ]),
  ).toString('base64url');
  return `s1.${payload}.${mac(key, payload)}`;
}

/** The state a string names when this server signed it and it has not expired; else null. */
export function verifyRequestState(key: Buffer, raw: unknown, nowMs: number): RequestState | null {
  if (typeof raw !== 'string' || raw.length > 4096) return null;
  const [version, payload, signature, ...rest] = raw.split('.');
  if (version !== 's1' || !payload || !signature || rest.length > 0) return null;
  const expected = Buffer.from(mac(key, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    const [workspaceUuid, principalId, tool, hash, taskUuid, position, expiresAtMs] = JSON.parse(
      Buffer.from(payload, 'base64url').toString('utf8'),
    );
    if (typeof expiresAtMs !== 'number' || expiresAtMs <= nowMs) return null;
    return { workspaceUuid, principalId, tool, argumentsHash: hash, taskUuid, position, expiresAtMs };
  } catch {
    return null;
  }
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

/** The form every question is asked with: one required string `answer`. */
export function elicitationParams(message: string) {
  return {
    mode: 'form',
    message,
    requestedSchema: {
      type: 'object',
      properties: { answer: { type: 'string', title: 'Answer', minLength: 1 } },
      required: ['answer'],
    },
  };
}

/** `{"question-<n>": elicitation/create}` for the task's current question. */
export function inputRequests(task: TaskRecord) {
  return {
    [`question-${task.messages.length}`]: {
      method: 'elicitation/create',
      params: elicitationParams(task.inputRequest?.message ?? ''),
    },
  };
}

/** What the client answered for `question-<n>`: an answer, a refusal (decline, cancel), or nothing usable. */
export function responseFor(
  inputResponses: unknown,
  position: number,
): { answer: string } | 'refused' | 'unusable' | 'none' {
  if (!inputResponses || typeof inputResponses !== 'object') return 'none';
  const response = (inputResponses as Record<string, unknown>)[`question-${position}`];
  if (!response || typeof response !== 'object') return 'none';
  const { action, content } = response as { action?: unknown; content?: { answer?: unknown } };
  if (action === 'decline' || action === 'cancel') return 'refused';
  if (action !== 'accept') return 'unusable';
  const answer = content && typeof content === 'object' ? content.answer : undefined;
  return typeof answer === 'string' && answer.length > 0 && answer.length <= 100_000 ? { answer } : 'unusable';
}
