import { batchedCompleter } from './completer.js';
import { RateLimitError, TaskhookError } from './errors.js';
import { type ClientOptions, callApi, resolveOptions, seg } from './http.js';
import { withRunContext } from './otel.js';
import type { ClaimedTask, TaskResult } from './types.js';

/** Thrown by `askForInput` to end this run of the handler; do not catch it. */
export class InputRequested extends Error {
  constructor(readonly question: string) {
    super('The task is waiting for input');
    this.name = 'InputRequested';
  }
}

/** Throw this from a handler to fail the task with a code, optionally queueing it again. */
export class TaskFailure extends Error {
  readonly code: string | undefined;
  readonly retryable: boolean;
  /** With `retryable`: wait at least this long before the retry (the agent's backoff when longer). */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    message: string,
    readonly options: { code?: string; retryable?: boolean; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'TaskFailure';
    this.code = options.code;
    this.retryable = options.retryable ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export interface WorkerContext {
  /** Reports progress (sent with the next heartbeat, at once when `flush` is true). */
  progress(currentStep: string, stepsCompleted: number, totalSteps: number, flush?: boolean): Promise<void>;
  /**
   * Puts the task in awaiting_input with this question and ends this run of the handler.
   * The user's reply starts a new run with the whole conversation in `task.messages`.
   */
  askForInput(question: string): Promise<never>;
  /** Aborted when the task is cancelled, the lease is lost, or the worker shuts down. */
  signal: AbortSignal;
  /**
   * The W3C trace context of this run (`00-<trace id>-<run span id>-01`). When the worker uses
   * OpenTelemetry the handler already runs with it as the active context, so its spans join the
   * task's trace under this run with no code; send it on outgoing calls your instrumentation does
   * not cover (e.g. to the model proxy).
   */
  traceparent: string;
}

export type TaskHandler = (task: ClaimedTask, ctx: WorkerContext) => Promise<TaskResult>;

export interface WorkerOptions extends ClientOptions {
  agentId: string;
  handler: TaskHandler;
  /** Tasks run at once by this worker; default 1. */
  concurrency?: number;
  /** Lease asked for each claim, seconds; default 60. Heartbeats go out every third of it. */
  leaseSeconds?: number;
  /** Long-poll wait of each claim, seconds; default 20. */
  waitSeconds?: number;
  workerId?: string;
  /** How long `stop()` lets running handlers finish before releasing their tasks; default 10 s. */
  gracePeriodMs?: number;
  /** Stop gracefully on SIGINT and SIGTERM; default true. */
  handleSignals?: boolean;
  log?: (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, unknown>) => void;
}

export interface RunningWorker {
  /** Stops claiming, lets running handlers finish (up to the grace period), releases the rest. */
  stop(): Promise<void>;
  /** Settles when the worker has stopped. */
  done: Promise<void>;
}

/**
 * Runs a pull worker: claims tasks of `agentId` in batches (long poll), runs `handler` for each
 * with a heartbeat on a timer, and reports the outcome. A cancelled task aborts its handler's
 * signal and its result is dropped. On a signal it stops gracefully, releasing what it holds.
 */
export function runWorker(options: WorkerOptions): RunningWorker {
  const http = resolveOptions(options);
  const concurrency = options.concurrency ?? 1;
  const waitSeconds = options.waitSeconds ?? 20;
  const leaseSeconds = options.leaseSeconds ?? 60;
  const log = options.log ?? ((level, message, extra) => console[level](`[taskhook worker] ${message}`, extra ?? ''));
  const base = `agent/${seg(options.agentId)}`;
  const running = new Map<string, { lease: string; abort: AbortController; done: Promise<void> }>();
  const stopping = new AbortController();
  let slotFreed: (() => void) | null = null;

  const post = <T>(path: string, body: unknown, signal?: AbortSignal) =>
    callApi<T>(http, 'POST', path, body, { signal, retry: true }).then((r) => r.body);
  const complete = batchedCompleter(post, base);

  /** Sends a report; a TASK_NOT_RUNNING refusal (cancelled meanwhile, or a retry of a committed report) is logged. */
  async function report(taskId: string, kind: string, body: unknown) {
    try {
      await post(`${base}/task/${seg(taskId)}/${kind}`, body);
    } catch (err) {
      if (err instanceof TaskhookError && err.code === 'TASK_NOT_RUNNING') {
        log('info', `${kind} refused: the task is no longer running`, { task: taskId });
      } else log('warn', `could not report ${kind}`, { task: taskId, error: String(err) });
    }
  }

  async function runTask(task: ClaimedTask, abort: AbortController) {
    const taskPath = `${base}/task/${seg(task.task_id)}`;
    let progress = { current_step: '', steps_completed: 0, total_steps: 0 };
    let finished = false;
    const heartbeat = async () => {
      try {
        const res = await post<{ status: string }>(`${taskPath}/progress`, { lease_id: task.lease_id, ...progress });
        if (res.status === 'cancelled') abort.abort(new Error('cancelled'));
      } catch (err) {
        if (err instanceof TaskhookError && err.status === 400) abort.abort(new Error('lease lost'));
        else log('warn', 'heartbeat failed', { task: task.task_id, error: String(err) });
      }
    };
    const timer = setInterval(() => void heartbeat(), Math.max(1000, (leaseSeconds * 1000) / 3));
    // Once aborted (cancelled, lease lost, released at shutdown) the lease is gone: stop heartbeating,
    // even if the handler ignores the signal and keeps running.
    abort.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    const ctx: WorkerContext = {
      signal: abort.signal,
      traceparent: task.traceparent,
      async progress(current_step, steps_completed, total_steps, flush = false) {
        progress = { current_step, steps_completed, total_steps };
        if (flush) await heartbeat();
      },
      async askForInput(question) {
        finished = true;
        await post(`${taskPath}/input_request`, { lease_id: task.lease_id, message: question });
        throw new InputRequested(question);
      },
    };
    const invalid = (message: string) =>
      report(task.task_id, 'fail', {
        lease_id: task.lease_id,
        error: { code: 'INVALID_RESULT', message },
        retryable: false,
      });
    try {
      const result = await withRunContext(task.traceparent, () => options.handler(task, ctx));
      if (abort.signal.aborted || finished) return;
      if (typeof result !== 'object' || result === null || Array.isArray(result)) {
        await invalid(`The handler returned ${result === null ? 'null' : typeof result}, not a JSON object`);
        return;
      }
      try {
        await complete(task, result);
      } catch (err) {
        if (err instanceof TaskhookError && err.code === 'INVALID_REQUEST') await invalid(err.message);
        else if (err instanceof TaskhookError && err.code === 'TASK_NOT_RUNNING') {
          log('info', 'complete refused: the task is no longer running', { task: task.task_id });
        } else log('warn', 'could not report complete', { task: task.task_id, error: String(err) });
      }
    } catch (err) {
      if (err instanceof InputRequested || abort.signal.aborted || finished) return;
      const failure = err instanceof TaskFailure ? err.options : {};
      const message = (err instanceof Error ? err.message || err.name : String(err)) || 'Error';
      await report(task.task_id, 'fail', {
        lease_id: task.lease_id,
        error: { ...(failure.code ? { code: failure.code } : {}), message },
        retryable: failure.retryable ?? false,
        ...(failure.retryable && failure.retryAfterSeconds !== undefined
          ? { retry_after_seconds: failure.retryAfterSeconds }
          : {}),
      });
    } finally {
      clearInterval(timer);
    }
  }

  function start(task: ClaimedTask) {
    const abort = new AbortController();
    const done = runTask(task, abort)
      .catch((err) => log('error', 'task run failed', { task: task.task_id, error: String(err) }))
      .finally(() => {
        running.delete(task.task_id);
        slotFreed?.();
      });
    running.set(task.task_id, { lease: task.lease_id, abort, done });
  }

  /**
   * Resolves when `wait` calls back or the worker starts stopping, whichever comes first. The abort
   * listener is removed afterwards: a worker that is often full must not pile up one per wait.
   */
  function untilStopping(wait: (resolve: () => void) => (() => void) | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      if (stopping.signal.aborted) return resolve();
      let cleanup: (() => void) | undefined;
      const finish = () => {
        stopping.signal.removeEventListener('abort', finish);
        cleanup?.();
        resolve();
      };
      stopping.signal.addEventListener('abort', finish, { once: true });
      cleanup = wait(finish);
    });
  }

  async function loop() {
    while (!stopping.signal.aborted) {
      const free = concurrency - running.size;
      if (free <= 0) {
        await untilStopping((resolve) => {
          slotFreed = resolve;
          return undefined;
        });
        slotFreed = null;
        continue;
      }
      try {
        const { body } = await callApi<{ tasks: ClaimedTask[] }>(
          http,
          'POST',
          `${base}/tasks/claim`,
          {
            max_tasks: free,
            wait_seconds: waitSeconds,
            lease_seconds: leaseSeconds,
            ...(options.workerId ? { worker_id: options.workerId } : {}),
          },
          { signal: stopping.signal, timeoutMs: (waitSeconds + 10) * 1000 },
        );
        if (stopping.signal.aborted) {
          for (const task of body.tasks) void release(task.task_id, task.lease_id);
          break;
        }
        for (const task of body.tasks) start(task);
      } catch (err) {
        if (stopping.signal.aborted) break;
        log('warn', 'claim failed; retrying', { error: String(err) });
        const waitMs = err instanceof RateLimitError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 1000;
        await untilStopping((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          return () => clearTimeout(timer);
        });
      }
    }
  }

  const release = (taskId: string, lease: string) =>
    post(`${base}/task/${seg(taskId)}/release`, { lease_id: lease }).catch((err) =>
      log('warn', 'could not release', { task: taskId, error: String(err) }),
    );

  const done = loop();
  let stopped: Promise<void> | null = null;

  async function stop() {
    stopped ??= (async () => {
      stopping.abort();
      await done;
      const all = [...running.values()];
      let graceTimer: NodeJS.Timeout | undefined;
      const grace = new Promise<'timeout'>((resolve) => {
        graceTimer = setTimeout(() => resolve('timeout'), options.gracePeriodMs ?? 10_000);
        skipGrace = () => resolve('timeout');
      });
      const outcome = await Promise.race([Promise.all(all.map((r) => r.done)), grace]);
      // Do not keep the process alive for the rest of the grace period once everything finished.
      clearTimeout(graceTimer);
      if (outcome === 'timeout') {
        for (const [taskId, r] of running) {
          r.abort.abort(new Error('worker stopping'));
          await release(taskId, r.lease);
        }
      }
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    })();
    return stopped;
  }

  let skipGrace: (() => void) | undefined;
  function onSignal() {
    if (stopped) {
      // A second signal: release what is still running now.
      log('info', 'stopping now: releasing running tasks');
      skipGrace?.();
      return;
    }
    log('info', 'stopping: finishing running tasks');
    void stop();
  }
  if (options.handleSignals ?? true) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }

  return { stop, done: done.then(() => stopped ?? undefined) };
}
