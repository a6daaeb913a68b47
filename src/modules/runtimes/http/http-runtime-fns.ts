import { Value } from '@sinclair/typebox/value';
import type { ClaimedTask } from '../../tasks/tasks-schemas.js';
import { MAX_MESSAGE_CHARS, ResultSchema } from '../../tasks/tasks-schemas.js';
import type { PushOutcome, TaskResultOut } from '../push-runtime.js';

/** Pure rules of the `http` runtime: the task.run body, and what an answer means for the task. */

export const DEFAULT_TIMEOUT_SECONDS = 30;
export const DEFAULT_LEASE_SECONDS = 60;

/** The absolute URLs an http agent reports through (the task and the worker protocol's four endpoints, docs/api.md §6). */
export function reportUrls(publicUrl: string, agentUuid: string, taskUuid: string) {
  const task = `${publicUrl.replace(/\/+$/, '')}/agent/${agentUuid}/task/${taskUuid}`;
  return {
    task,
    progress: `${task}/progress`,
    input_request: `${task}/input_request`,
    complete: `${task}/complete`,
    fail: `${task}/fail`,
  };
}

/** The JSON text of a `task.run` webhook: the claim item of the worker protocol (docs/api.md §6), its agent and report URLs. */
export function taskRunBody(item: ClaimedTask, agentUuid: string, publicUrl: string, timestamp: string): string {
  const { task_id, lease_id, ...rest } = item;
  const data = { task_id, agent_uuid: agentUuid, lease_id, ...rest, urls: reportUrls(publicUrl, agentUuid, task_id) };
  return JSON.stringify({ type: 'task.run', timestamp, data });
}

/** The JSON text of a `task.cancelled` webhook. */
export function taskCancelledBody(taskUuid: string, agentUuid: string, leaseId: string, timestamp: string): string {
  return JSON.stringify({
    type: 'task.cancelled',
    timestamp,
    data: { task_id: taskUuid, agent_uuid: agentUuid, lease_id: leaseId },
  });
}

const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const onlyKeys = (o: Record<string, unknown>, allowed: string[]) => Object.keys(o).every((k) => allowed.includes(k));

function invalidAnswer(reason: string): PushOutcome {
  return {
    kind: 'failed',
    code: 'INVALID_AGENT_RESPONSE',
    message: `The agent's answer is not one of the accepted shapes: ${reason}`,
    retryable: false,
    retryAfterMs: null,
  };
}

/** A failed delivery (non-2xx, no answer in time, connection trouble): retryable. */
export function deliveryFailed(reason: string, retryAfterMs: number | null = null): PushOutcome {
  return { kind: 'failed', code: 'DELIVERY_FAILED', message: reason, retryable: true, retryAfterMs };
}

/** A 200 answer's JSON: a result, a question for the user, or a failure as the worker protocol's `fail` takes it. */
function outcomeOfJson(body: unknown): PushOutcome {
  if (!isObject(body)) return invalidAnswer('not a JSON object');
  if ('result' in body) {
    if (!onlyKeys(body, ['result'])) return invalidAnswer('result comes alone');
    if (!Value.Check(ResultSchema, body.result)) return invalidAnswer('result is not a valid task result');
    const out = body.result as TaskResultOut;
    return { kind: 'completed', result: { ...out, findings: out.findings ?? [] } };
  }
  if ('input_request' in body) {
    const message = isObject(body.input_request) ? body.input_request.message : undefined;
    if (
      !onlyKeys(body, ['input_request']) ||
      !isObject(body.input_request) ||
      !onlyKeys(body.input_request, ['message'])
    )
      return invalidAnswer('input_request must be {"message": "…"} alone');
    if (typeof message !== 'string' || message.length === 0 || message.length > MAX_MESSAGE_CHARS)
      return invalidAnswer(`input_request.message must be 1–${MAX_MESSAGE_CHARS} characters`);
    return { kind: 'input_request', message };
  }
  if ('error' in body) {
    const { error, retryable } = body;
    if (!onlyKeys(body, ['error', 'retryable']) || !isObject(error) || !onlyKeys(error, ['code', 'message']))
      return invalidAnswer('error must be {"code"?, "message"} with an optional retryable');
    const { code, message } = error;
    if (typeof message !== 'string' || message.length === 0 || message.length > 10_000)
      return invalidAnswer('error.message must be 1–10,000 characters');
    if (code !== undefined && (typeof code !== 'string' || !ERROR_CODE.test(code)))
      return invalidAnswer('error.code must be upper-case letters, digits and _');
    if (retryable !== undefined && typeof retryable !== 'boolean') return invalidAnswer('retryable must be a boolean');
    return {
      kind: 'failed',
      code: code ?? 'AGENT_ERROR',
      message,
      retryable: retryable === true,
      retryAfterMs: null,
    };
  }
  return invalidAnswer('none of result, input_request or error');
}

/**
 * What the agent's answer to a task.run means: 200 with a result, a question or an error; 202
 * accepted (the agent reports later under the lease); any other 2xx or body is
 * INVALID_AGENT_RESPONSE (not retried); any other status is DELIVERY_FAILED (retried, honouring
 * Retry-After).
 */
export function outcomeOfAnswer(answer: {
  status: number;
  body: string;
  retryAfterMs: number | null;
  leaseSeconds: number;
}): PushOutcome {
  const { status } = answer;
  if (status === 202) return { kind: 'accepted', leaseSeconds: answer.leaseSeconds };
  if (status === 200) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      return invalidAnswer('the body is not JSON');
    }
    return outcomeOfJson(parsed);
  }
  if (status >= 200 && status < 300) return invalidAnswer(`HTTP ${status} is neither 200 nor 202`);
  return deliveryFailed(`The agent answered HTTP ${status}`, answer.retryAfterMs);
}
