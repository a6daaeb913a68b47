import type { Readable } from 'node:stream';
import { retryAfterMs } from '../../../lib/retry-after.js';
import { ProxyError } from '../../spotlight/proxy/proxy-fns.js';
import type { ProxyService } from '../../spotlight/proxy/proxy-service.js';
import type { PushOutcome, PushRuntime } from '../push-runtime.js';
import {
  type ConversationMessage,
  chatRequestOf,
  isRetryableStatus,
  type ModelOutcome,
  outcomeOfAnswer,
} from './model-runtime-fns.js';
import type { OpenAiRuntime } from './model-schema.js';

/** One run of a task by its model: who, which task, the whole conversation so far. */
export interface ModelRun {
  workspaceUuid: string;
  agentUuid: string;
  taskUuid: string;
  runtime: OpenAiRuntime;
  conversation: ConversationMessage[];
  /** Aborted on cancel or timeout: the upstream request is closed at once. */
  signal: AbortSignal;
}

/** What the lifecycle does next; `aborted` when the run's signal ended it. */
export type RunOutcome = (ModelOutcome | { kind: 'aborted' }) & { callId: string | null };

async function textOf(body: string | Buffer | Readable): Promise<string> {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function upstreamMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === 'string') return m;
  } catch {
    // not JSON
  }
  return text.slice(0, 500);
}

/**
 * Runs tasks of agents that are a model: each run is one chat completion through the model proxy's
 * path (recorded with source "runtime" and the task), and its answer becomes the outcome the task
 * lifecycle applies: complete, ask for input, or fail (retryable or not) with PROVIDER_ERROR, or at
 * once with BUDGET_EXCEEDED when a budget refused the call, or MODEL_NOT_PRICED when a budget applies
 * and the model has no price.
 */
export function createModelRuntime(deps: { spotlight: Pick<ProxyService, 'chatCompletions'>; now: () => number }) {
  return {
    /** One run; never throws for provider trouble (that is an outcome). */
    async run(run: ModelRun): Promise<RunOutcome> {
      let answer: Awaited<ReturnType<ProxyService['chatCompletions']>>;
      try {
        answer = await deps.spotlight.chatCompletions(
          {
            workspaceUuid: run.workspaceUuid,
            body: chatRequestOf(run.runtime, run.conversation),
            credential: run.runtime.provider_credential_uuid,
            routeUuid: run.runtime.route_uuid,
            // The dispatcher admitted this run under the agent's rate limits before handing it out.
            task: { taskUuid: run.taskUuid, agentUuid: run.agentUuid, admitted: true },
            signal: run.signal,
          },
          'runtime',
        );
      } catch (err) {
        if (!(err instanceof ProxyError)) throw err;
        // Refused before any upstream call (e.g. the credential is gone): another attempt cannot help.
        const message = `The provider call was refused (HTTP ${err.status}): ${err.message}`;
        return { kind: 'failed', retryable: false, retryAfterMs: null, message, callId: null };
      }
      const { callId } = answer;
      if (run.signal.aborted) return { kind: 'aborted', callId };
      const text = await textOf(answer.body);
      // The proxy's own refusals are not retried: spend does not go down until the window ends or
      // the limit is raised, and a model gets a price only when the operator adds one.
      if (answer.refused !== undefined) {
        return {
          kind: 'failed',
          retryable: false,
          retryAfterMs: null,
          message: upstreamMessage(text),
          code: answer.refused === 'budget_exceeded' ? 'BUDGET_EXCEEDED' : 'MODEL_NOT_PRICED',
          callId,
        };
      }
      if (answer.status >= 200 && answer.status < 300) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = null;
        }
        return { ...outcomeOfAnswer(parsed, run.runtime.allow_input_requests === true), callId };
      }
      return {
        kind: 'failed',
        retryable: isRetryableStatus(answer.status),
        retryAfterMs: retryAfterMs(answer.headers['retry-after'], deps.now()),
        message: `The provider answered HTTP ${answer.status}: ${upstreamMessage(text)}`,
        callId,
      };
    },
  };
}

export type ModelRuntime = ReturnType<typeof createModelRuntime>;

/**
 * The model runtime as a push runtime: the conversation of the claimed task goes to the model;
 * its failures carry PROVIDER_ERROR, or BUDGET_EXCEEDED or MODEL_NOT_PRICED (never retried).
 */
export function modelPushRuntime(model: ModelRuntime): PushRuntime<OpenAiRuntime> {
  return {
    async run({ task, runtime, signal }): Promise<PushOutcome> {
      const { callId: _call, ...outcome } = await model.run({
        workspaceUuid: task.workspaceUuid,
        agentUuid: task.agentUuid,
        taskUuid: task.uuid,
        runtime,
        conversation: task.messages.map(({ role, content }) => ({ role, content })),
        signal,
      });
      return outcome.kind === 'failed' ? { ...outcome, code: outcome.code ?? 'PROVIDER_ERROR' } : outcome;
    },
  };
}
