import type { Db, Executor } from '../../../db/connect.js';
import { UniqueViolationError } from '../../../db/errors.js';
import { AppError, invalid } from '../../../http/errors.js';
import type { AccountLanes } from '../../../lib/account-lanes.js';
import { newId } from '../../../lib/ids.js';
import { type Clock, iso } from '../../../lib/time.js';
import type { AgentRow } from '../../agents/agents-repo.js';
import type { AgentsService } from '../../agents/agents-service.js';
import { isDefaultBackoff } from '../../agents/retry-policy.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import { initial, type NewTask } from '../lifecycle/transition-fns.js';
import { requestHash } from '../tasks-fns.js';
import { MAX_METADATA_BYTES, type SubmitInput, type SubmitResult } from '../tasks-schemas.js';
import { requireAvailableFrom } from './delay-fns.js';
import type { createEstimator } from './estimator.js';
import type { IdempotencyRecord, idempotencyRepo } from './idempotency-repo.js';
import { createInsertBatcher } from './insert-batcher.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** The priority of a task submitted without one. */
export const DEFAULT_PRIORITY = 5;

/**
 * A submit that is a rerun (docs/api.md §5.9): the task it reruns, and what runs in the
 * submit's transaction before the insert (a bulk rerun locks and checks its source there;
 * throwing rolls the submit back).
 */
export interface RerunOf {
  sourceUuid: string;
  before?: (trx: Executor) => Promise<void>;
}

/** The caller's span a new task hangs under (its trace id and span id, lowercase hex). */
export interface TraceParent {
  traceId: string;
  spanId: string;
}

/**
 * Submitting tasks: the checks of a submit, Idempotency-Key replays, preparing a queued task and
 * writing it (batched with the other submits of the turn when nothing else is written with it).
 * Other rooms that create tasks (webhook triggers, schedules, the A2A server, MCP) come here too.
 */
export function createTaskSubmitter(deps: {
  db: Db;
  idempotency: typeof idempotencyRepo;
  agents: Pick<AgentsService, 'requireOwned'>;
  /** The door new tasks go through (`create`), as every change of a task does. */
  lifecycle: Pick<Lifecycle, 'create' | 'createMany'>;
  estimator: ReturnType<typeof createEstimator>;
  clock: Clock;
  publicUrl: string;
  /** @throws AppError INVALID_REQUEST when the callback address may not be called. */
  checkWebhookUrl: (url: string) => Promise<void>;
  /** Per-account lanes every submit passes through (TASKHOOK_SUBMITS_PER_ACCOUNT). */
  lanes: Pick<AccountLanes, 'run'>;
}) {
  const { db, lifecycle } = deps;
  const batcher = createInsertBatcher({ db, lifecycle });

  /** The task's poll and cancel addresses, as every answer about it gives them. */
  function urls(agentUuid: string, taskUuid: string) {
    const poll = `${deps.publicUrl}/agent/${agentUuid}/task/${taskUuid}`;
    return { poll_url: poll, cancel_url: `${poll}/cancel` };
  }

  async function validate(input: SubmitInput, nowMs: number) {
    requireAvailableFrom(input, nowMs);
    if (input.metadata && Buffer.byteLength(JSON.stringify(input.metadata)) > MAX_METADATA_BYTES) {
      throw invalid('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
    }
    const mode = input.callback_mode ?? 'poll';
    if (mode === 'webhook' && !input.webhook_url)
      throw invalid('webhook_url', 'is required with callback_mode webhook');
    if (mode === 'poll' && input.webhook_url)
      throw invalid('webhook_url', 'is only allowed with callback_mode webhook');
    if (input.webhook_url) await deps.checkWebhookUrl(input.webhook_url);
  }

  /**
   * The first response to a live Idempotency-Key of the user, or null when there is none.
   * @throws AppError IDEMPOTENCY_KEY_REUSED when the key was used for another agent or body.
   */
  async function replayOf(
    workspaceUuid: string,
    key: string,
    hash: string,
    nowMs: number,
  ): Promise<SubmitResult | null> {
    const first = await deps.idempotency.find(db.kysely, workspaceUuid, key);
    if (!first || first.expiresAt <= iso(nowMs)) return null;
    if (first.requestHash !== hash) {
      throw new AppError(
        'IDEMPOTENCY_KEY_REUSED',
        'This Idempotency-Key was used with a different agent or request body',
      );
    }
    return first.response as SubmitResult;
  }

  /**
   * A new task for the agent in its first state (`initial`, the transition function's) and the
   * submit response announcing it (nothing written yet).
   */
  async function prepare(
    agent: Pick<AgentRow, 'uuid' | 'concurrency' | 'default_timeout_seconds' | 'retry'>,
    workspaceUuid: string,
    input: SubmitInput,
    nowMs: number,
    parent: TraceParent | null = null,
    rerunOf: string | null = null,
  ): Promise<{ task: NewTask; response: SubmitResult }> {
    const priority = input.priority ?? DEFAULT_PRIORITY;
    const uuid = newId();
    const availableAtMs = requireAvailableFrom(input, nowMs);
    // Never estimated to start before it may be handed out.
    const estimatedStart = iso(Math.max(availableAtMs, await deps.estimator.estimate(agent, priority, nowMs)));
    const task = initial(
      {
        uuid,
        agentUuid: agent.uuid,
        workspaceUuid,
        priority,
        message: input.message,
        metadata: input.metadata ?? {},
        callbackMode: input.callback_mode ?? 'poll',
        webhookUrl: input.webhook_url ?? null,
        timeoutSeconds: input.timeout_override ?? agent.default_timeout_seconds,
        estimatedStart,
        traceId: parent?.traceId ?? null,
        traceParentSpanId: parent?.spanId ?? null,
        concurrencyKey: input.concurrency_key ?? null,
        // The agent's retry policy now is the task's for its whole life.
        maxAttempts: agent.retry.max_attempts,
        backoff: isDefaultBackoff(agent.retry.backoff) ? null : agent.retry.backoff,
        availableAt: iso(availableAtMs),
        rerunOf,
      },
      nowMs,
    );
    const response: SubmitResult = {
      task_id: uuid,
      status: task.status,
      created_at: task.createdAt,
      estimated_start: estimatedStart,
      ...urls(agent.uuid, uuid),
    };
    if (rerunOf) response.rerun_of = rerunOf;
    return { task, response };
  }

  return {
    urls,

    /**
     * For other capabilities that create tasks in their own transaction (webhook triggers):
     * `prepare` outside it, `insert` inside it (workers are woken once it commits).
     */
    prepare,

    /** Writes a task made by `prepare` in the caller's transaction, through the door (workers are woken once it commits). */
    insert: (trx: Executor, task: NewTask) => lifecycle.create(trx, task),
    /** `insert` for several tasks in one multi-row INSERT (a batch of webhook deliveries). */
    insertMany: (trx: Executor, tasks: NewTask[]) => lifecycle.createMany(trx, tasks),

    /**
     * Queues a task. With an idempotency key, a repeat of the same request within 24 h answers
     * the first response and creates nothing. `alsoWrite` commits with the task's insert (what
     * else records the task, e.g. the MCP server's list); a replay does not run it.
     * @throws AppError NOT_FOUND, AGENT_UNAVAILABLE, INVALID_REQUEST, IDEMPOTENCY_KEY_REUSED.
     */
    submit(
      workspaceUuid: string,
      agentUuid: string,
      input: SubmitInput,
      idempotencyKey?: string,
      parent: TraceParent | null = null,
      alsoWrite?: (trx: Executor, task: { uuid: string; createdAt: string }) => Promise<unknown>,
    ): Promise<{ response: SubmitResult; replayed: boolean }> {
      // In the account's lane: a burst of one account waits in its own queue, not ahead of others.
      return deps.lanes.run(workspaceUuid, () =>
        submitNow(workspaceUuid, agentUuid, input, idempotencyKey, parent, alsoWrite),
      );
    },

    /**
     * A submit of `input` (the source's fields merged with the overrides) as a rerun of
     * `rerun.sourceUuid`: the same checks, policy, events and replays as `submit`, the answer
     * with `rerun_of`; an Idempotency-Key's fingerprint is the source task and the request body.
     * @throws AppError as `submit`.
     */
    rerun(
      workspaceUuid: string,
      agentUuid: string,
      input: SubmitInput,
      rerun: RerunOf & { body: unknown },
      idempotencyKey?: string,
    ): Promise<{ response: SubmitResult; replayed: boolean }> {
      return deps.lanes.run(workspaceUuid, () =>
        submitNow(workspaceUuid, agentUuid, input, idempotencyKey, null, undefined, rerun),
      );
    },
  };

  async function submitNow(
    workspaceUuid: string,
    agentUuid: string,
    input: SubmitInput,
    idempotencyKey: string | undefined,
    parent: TraceParent | null,
    alsoWrite: ((trx: Executor, task: { uuid: string; createdAt: string }) => Promise<unknown>) | undefined,
    rerun?: RerunOf & { body: unknown },
  ): Promise<{ response: SubmitResult; replayed: boolean }> {
    const nowMs = deps.clock.now();
    await validate(input, nowMs);
    const agent = await deps.agents.requireOwned(workspaceUuid, agentUuid);
    // Only a submit with an Idempotency-Key is compared with another: hashing costs the others.
    // A rerun's fingerprint is its source and its own body (the key shares the submits' namespace).
    const fingerprint = rerun ? { rerun_of: rerun.sourceUuid, body: rerun.body ?? null } : input;
    const hash = idempotencyKey ? requestHash(agentUuid, fingerprint) : '';
    // A retry gets the first answer whatever happened since, e.g. the agent was paused.
    const earlier = idempotencyKey ? await replayOf(workspaceUuid, idempotencyKey, hash, nowMs) : null;
    if (earlier) return { response: earlier, replayed: true };
    if (agent.status !== 'active') {
      throw new AppError('AGENT_UNAVAILABLE', `Agent is ${agent.status} and does not accept tasks`);
    }
    const { task, response } = await prepare(agent, workspaceUuid, input, nowMs, parent, rerun?.sourceUuid ?? null);
    const now = task.createdAt;
    const uuid = task.uuid;
    const key: IdempotencyRecord | null = idempotencyKey
      ? {
          workspaceUuid,
          key: idempotencyKey,
          requestHash: hash,
          taskUuid: uuid,
          response,
          createdAt: now,
          expiresAt: iso(nowMs + DAY_MS),
        }
      : null;
    // Without an Idempotency-Key the insert is the whole write: it joins the submits of this
    // turn of the event loop in one transaction (see insert-batcher.ts).
    if (!key && !alsoWrite && !rerun?.before) {
      await batcher.insert(task);
      return { response, replayed: false };
    }
    try {
      await db.transaction(async (trx) => {
        if (key) await deps.idempotency.claim(trx, key);
        await rerun?.before?.(trx);
        await lifecycle.create(trx, task);
        await alsoWrite?.(trx, task);
      });
    } catch (err) {
      if (!(err instanceof UniqueViolationError) || !key) throw err;
      const first = await replayOf(workspaceUuid, key.key, hash, nowMs);
      if (!first) throw new AppError('CONFLICT', 'A request with this Idempotency-Key is in flight; retry');
      return { response: first, replayed: true };
    }
    return { response, replayed: false };
  }
}

export type TaskSubmitter = ReturnType<typeof createTaskSubmitter>;
