import { setTimeout as sleep } from 'node:timers/promises';
import type { Task, TaskStatus } from '@a2a-js/sdk';
import type { Transport } from '@a2a-js/sdk/client';
import { createFairOutboundDispatcher, type OutboundPolicy, OutboundUrlError } from '../../../lib/outbound.js';
import type { FairOutbound } from '../../../lib/outbound-fair.js';
import { type Clock, systemClock } from '../../../lib/time.js';
import type { PushOutcome, PushRuntime } from '../push-runtime.js';
import {
  type A2aEndpoint,
  type AskedQuestion,
  applyStreamEvent,
  CardError,
  deliveryFailed,
  isAnsweredQuestion,
  outcomeOfMessage,
  outcomeOfTask,
  planOf,
  questionOf,
  type RemoteTaskState,
  remoteOf,
  sendRequestOf,
  type TaskView,
} from './a2a-client-fns.js';
import { type A2aSession, createCardCache, headersOf, openSession, transportOf } from './a2a-client-http.js';
import type { A2aRuntime } from './a2a-schema.js';

export interface A2aRuntimeDeps {
  /** The outbound guard's policy (TASKHOOK_ALLOW_PRIVATE_URLS, the resolver). */
  outbound: OutboundPolicy;
  clock?: Clock;
  /** Connect and answer timeout of each request; a stream quiet this long is followed by polling. Default 30 s. */
  timeoutMs?: number;
  /** Time between two `GetTask` calls while following a task without a stream. Default 1 s. */
  pollIntervalMs?: number;
  /** How long a fetched agent card is used. Default 5 minutes. */
  cardTtlMs?: number;
  /** Most bytes one answer (or one stream) of the agent may carry; default MAX_ANSWER_BYTES (16 MiB). */
  maxAnswerBytes?: number;
  /** Per-account lanes over the guarded dispatcher; default its own, 16 requests per account. */
  lanes?: FairOutbound;
}

/** Why a request failed, in words for the task's error (never the request's headers). */
function reasonOf(err: unknown): string {
  if (err instanceof CardError || err instanceof OutboundUrlError) return err.message;
  const e = err as { message?: unknown; cause?: { message?: unknown; code?: unknown } };
  const cause = e?.cause?.message ?? e?.cause?.code;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return typeof cause === 'string' && cause !== message ? `${message} (${cause})` : message;
}

/**
 * The `a2a` push runtime: taskhook as the client of a remote A2A 1.0 agent (JSON-RPC or
 * HTTP+JSON). A run sends the conversation as a new remote task, or the user's reply to the remote
 * task that asked for input, and follows it (stream, else `GetTask` polling) until it ends or asks
 * for input. What it must remember (the remote task, its endpoint, the attempt) goes to the
 * task's runtime state as soon as it is known, so a run handed back at shutdown resumes following
 * the same remote task instead of sending it twice.
 */
export function createA2aRuntime(deps: A2aRuntimeDeps): PushRuntime<A2aRuntime> {
  const clock = deps.clock ?? systemClock;
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  const lanes = deps.lanes ?? createFairOutboundDispatcher({ ...deps.outbound, timeoutMs, perAccount: 16 });
  const cards = createCardCache({ clock, ttlMs: deps.cardTtlMs ?? 5 * 60_000 });
  const sessionOf = (account: string, runtime: A2aRuntime, traceparent: string | null, signal: AbortSignal) =>
    openSession(
      { outbound: deps.outbound, dispatcher: lanes.forAccount(account), clock, maxAnswerBytes: deps.maxAnswerBytes },
      headersOf(runtime.headers, traceparent),
      signal,
    );

  /** One CancelTask for a remote task, its outcome ignored. */
  async function cancelRemote(account: string, runtime: A2aRuntime, remote: RemoteTaskState): Promise<void> {
    const session = sessionOf(account, runtime, null, AbortSignal.timeout(10_000));
    try {
      const transport = await transportOf(session, remote);
      await transport.cancelTask(
        { tenant: remote.tenant, id: remote.taskId, metadata: undefined },
        { signal: session.signal, serviceParameters: session.headers },
      );
    } catch {
      // one attempt, outcome ignored
    }
  }

  /**
   * The outcome `view` decides, or null while the remote task is under way or still shows the
   * question already answered (`asked`). Keeps the deciding status (an input request's question).
   */
  function decide(ctx: RunContext, view: Task | TaskView | null, asked: AskedQuestion | undefined) {
    if (!view || isAnsweredQuestion(view.status, asked)) return null;
    const outcome = outcomeOfTask(view);
    if (outcome) ctx.status = view.status;
    return outcome;
  }

  /** Follows a remote task by `GetTask` until a state it reached after `asked` was answered decides the run. */
  async function poll(
    ctx: RunContext,
    transport: Transport,
    remote: RemoteTaskState,
    first: Task | TaskView | null,
    asked: AskedQuestion | undefined,
  ) {
    const { session } = ctx;
    let view = first;
    for (;;) {
      const decided = decide(ctx, view, asked);
      if (decided) return decided;
      if (view) await sleep(pollIntervalMs, undefined, { signal: session.signal });
      view = await transport.getTask(
        { tenant: remote.tenant, id: remote.taskId, historyLength: 0 },
        { signal: session.signal, serviceParameters: session.headers },
      );
    }
  }

  /** What one run carries through its steps: the session, and the remote task as last saved. */
  interface RunContext {
    session: A2aSession;
    attempt: number;
    remote: RemoteTaskState | null;
    /** The SendMessage of a new remote task is in flight (the remote may have made a task we cannot name yet). */
    sendingNew: boolean;
    /** The status that decided the run. */
    status?: TaskStatus;
    save(remote: RemoteTaskState): Promise<void>;
  }

  /**
   * Sends `texts` (a new remote task when `to` is null, else the reply to `to`) or, without texts,
   * only follows `to`; then follows the remote task until its state decides the run.
   */
  async function follow(
    ctx: RunContext,
    endpoint: A2aEndpoint,
    texts: string[] | null,
    to: RemoteTaskState | null,
  ): Promise<PushOutcome> {
    const { session } = ctx;
    const transport = await transportOf(session, endpoint);
    const options = { signal: session.signal, serviceParameters: session.headers };
    // A reply is answered only by a state the remote reached after it: until a status update
    // arrives, a view still showing the question already answered is the task as it was.
    let asked = to?.asked;
    const remember = (taskId: string, contextId: string) =>
      ctx.save({ ...endpoint, taskId, contextId, attempt: ctx.attempt, phase: 'following', ...(asked && { asked }) });
    if (to && !texts) return poll(ctx, transport, to, null, asked);
    // Saved before the reply goes out: a run that dies now resumes following, never sends it twice.
    if (to) await remember(to.taskId, to.contextId);
    const request = sendRequestOf(texts ?? [], to, endpoint.tenant);
    let view: TaskView | null = null;
    let accepted = false;
    ctx.sendingNew = to === null;
    try {
      if (endpoint.streaming) {
        for await (const event of transport.sendMessageStream(request, options)) {
          accepted = true;
          if (event.payload?.$case === 'message' && !view) return outcomeOfMessage(event.payload.value);
          if (event.payload?.$case === 'statusUpdate') asked = undefined;
          view = applyStreamEvent(view, event);
          if (view && !ctx.remote) await remember(view.id, view.contextId);
          const decided = decide(ctx, view, asked);
          if (decided) return decided;
        }
      } else {
        const answer = await transport.sendMessage(request, options);
        if (!('status' in answer)) return outcomeOfMessage(answer);
        view = answer;
        await remember(answer.id, answer.contextId);
      }
    } catch (err) {
      // A stream that breaks after the remote took the message is followed by polling; anything else fails the run.
      if (!accepted || !ctx.remote || session.signal.aborted || !endpoint.streaming) throw err;
    } finally {
      ctx.sendingNew = false;
    }
    if (!ctx.remote) throw new Error('the stream ended before the remote agent named a task');
    return poll(ctx, transport, ctx.remote, endpoint.streaming ? null : view, asked);
  }

  return {
    async run(run) {
      const { task, runtime, signal } = run;
      const saved = remoteOf(run.state);
      const plan = planOf(saved, task.attempt, task.messages);
      // The session's requests end with the run, but for one: a SendMessage of a new remote task
      // that is in flight when the run is cancelled (or handed back). Aborting it could leave a
      // task the remote has already made running for nobody, with no id to cancel it by. So the
      // run ends at once, and the request goes on (at most timeoutMs) until it names the task,
      // which then gets its CancelTask instead of being saved.
      const requests = new AbortController();
      let abandoned = false;
      const ended = new Promise<PushOutcome>((resolve) => {
        const onAbort = () => {
          resolve({ kind: 'aborted' });
          if (!ctx.sendingNew || ctx.remote) return requests.abort(signal.reason);
          abandoned = true;
          setTimeout(() => requests.abort(signal.reason), timeoutMs).unref();
        };
        if (signal.aborted) queueMicrotask(onAbort);
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      const ctx: RunContext = {
        session: sessionOf(task.workspaceUuid, runtime, run.traceparent, requests.signal),
        attempt: task.attempt,
        remote: plan.kind === 'new' ? null : saved,
        sendingNew: false,
        async save(remote) {
          if (abandoned) {
            requests.abort(signal.reason);
            void cancelRemote(task.workspaceUuid, runtime, remote);
            return;
          }
          ctx.remote = remote;
          await run.saveState({ ...remote });
        },
      };
      const work = perform(run, ctx, plan, saved);
      work.catch(() => undefined);
      return Promise.race([work, ended]);
    },

    async cancelled({ task, runtime, state }) {
      const remote = remoteOf(state);
      if (remote) await cancelRemote(task.workspaceUuid, runtime, remote);
    },
  };

  /** One run's work, from the card to the outcome (`run` above adds how a cancel ends it). */
  async function perform(
    run: Parameters<PushRuntime<A2aRuntime>['run']>[0],
    ctx: RunContext,
    plan: ReturnType<typeof planOf>,
    saved: RemoteTaskState | null,
  ): Promise<PushOutcome> {
    const { task, runtime, signal } = run;
    // A remote task this run does not continue (an earlier attempt's, or one left waiting for a
    // reply that never came) may still run or wait: it is not wanted any more.
    if (plan.kind === 'new' && saved) void cancelRemote(task.workspaceUuid, runtime, saved);
    try {
      let outcome: PushOutcome;
      if (plan.kind !== 'new' && saved) {
        outcome = await follow(ctx, saved, plan.kind === 'reply' ? [plan.text] : null, saved);
      } else {
        const { endpoint } = await cards.get(runtime.agent_card_url, ctx.session);
        outcome = await follow(
          ctx,
          endpoint,
          task.messages.map((m) => m.content),
          null,
        );
      }
      if (outcome.kind === 'input_request' && ctx.remote)
        await ctx.save({ ...ctx.remote, phase: 'awaiting_input', asked: questionOf(ctx.status) });
      return outcome;
    } catch (err) {
      if (signal.aborted) return { kind: 'aborted' };
      // The remote task this run gives up on would otherwise work on for nobody.
      if (ctx.remote) void cancelRemote(task.workspaceUuid, runtime, ctx.remote);
      return deliveryFailed(`A2A call failed: ${reasonOf(err)}`, ctx.session.retryAfterMs);
    }
  }
}
