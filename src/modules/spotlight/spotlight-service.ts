import type { Db, Executor } from '../../db/connect.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { OpenedCredential, ProvidersService } from '../providers/providers-service.js';
import { refusalAnswer } from './budget-fns.js';
import type { SpendOf } from './budgets-repo.js';
import type { BudgetsService, CallScopes } from './budgets-service.js';
import { checkChatBody, chunkFacts, ProxyError, proxyError, splitModel, upstreamChatBody } from './spotlight-fns.js';
import { costNanos, type PriceTable } from './spotlight-prices.js';
import {
  type CallOutcome,
  callUpstream,
  failedOutcome,
  type ProxyAnswer,
  relayWhole,
  type UpstreamDeps,
} from './spotlight-proxy.js';
import type { SpotlightRepo } from './spotlight-repo.js';
import { relayStream } from './spotlight-stream.js';
import type { CallObserver, RecordedCall } from './spotlight-telemetry.js';

/** How long one credential's model list may take when listing all of them. */
const MODEL_LIST_TIMEOUT_MS = 15_000;
/** How long listing all of them may take: credentials not asked by then are left out. */
const MODEL_LISTS_DEADLINE_MS = 30_000;
/** Credentials asked at once when listing all of them. */
const MODEL_LIST_CONCURRENCY = 4;
/** Largest model list read from one upstream (real lists are tens of kilobytes). */
export const MODEL_LIST_MAX_BYTES = 1024 * 1024;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Who calls and for what: the proxy's request, as plain data. */
export interface ChatRequest {
  workspaceUuid: string;
  body: unknown;
  /** X-Taskhook-Credential. */
  credential?: string | undefined;
  /** X-Taskhook-Task-Id. */
  taskId?: string | undefined;
  /** The platform key that authenticated the request (null or absent: a session, or the runtime). */
  platformKeyUuid?: string | null | undefined;
  /** The task a model runtime call serves (already known to be the user's). */
  task?: { taskUuid: string; agentUuid: string } | undefined;
  traceparent?: string | undefined;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
}

export interface ChatAnswer extends ProxyAnswer {
  callId: string | null;
}

/** The model proxy: credential selection, forwarding, and one record per call. */
export function createSpotlightService(deps: {
  db: Db;
  repo: SpotlightRepo;
  providers: Pick<ProvidersService, 'resolve' | 'touch' | 'openAll'>;
  upstream: UpstreamDeps;
  clock: Clock;
  prices: PriceTable;
  observers: CallObserver[];
  log: (err: unknown, msg: string) => void;
  /** Budgets: the check before a call goes upstream, and the spend each record adds (same transaction). */
  budgets: Pick<BudgetsService, 'check'> & { addSpend: (trx: Executor, call: SpendOf) => Promise<void> };
}) {
  const { db, repo } = deps;

  async function attribution(workspaceUuid: string, taskId: string | undefined) {
    if (taskId === undefined) return null;
    const task = UUID_RE.test(taskId) ? await repo.findTask(db.kysely, workspaceUuid, taskId) : undefined;
    if (!task) throw proxyError(400, 'X-Taskhook-Task-Id does not name one of your tasks', 'invalid_task_id');
    return { taskUuid: task.uuid, agentUuid: task.agent_uuid };
  }

  async function select(req: ChatRequest, model: string) {
    if (req.credential !== undefined) {
      const credential = await deps.providers.resolve(req.workspaceUuid, req.credential);
      if (!credential)
        throw proxyError(404, 'X-Taskhook-Credential names none of your provider credentials', 'credential_not_found');
      return { credential, upstreamModel: model };
    }
    const split = splitModel(model);
    const credential = split && (await deps.providers.resolve(req.workspaceUuid, split.credential));
    if (!split || !credential || credential.name !== split.credential) {
      throw proxyError(
        404,
        `The model "${model}" does not exist: use <credential name>/<model>, or name a credential in X-Taskhook-Credential`,
        'model_not_found',
        'model',
      );
    }
    return { credential, upstreamModel: split.upstream };
  }

  /** Writes the record (and tells the observers); a failure to record never fails the answer. */
  async function record(
    base: Omit<RecordedCall, keyof CallOutcome | 'costNanos' | 'latencyMs' | 'attempts'>,
    arrivedAt: number,
    outcome: CallOutcome,
  ) {
    // A budget refusal went nowhere; any other plain call made the one exchange it describes.
    const noAnswer = outcome.error?.code === 'upstream_timeout' || outcome.error?.code === 'upstream_unreachable';
    const attempts =
      outcome.error?.code === 'budget_exceeded'
        ? []
        : [
            {
              providerCredentialUuid: base.providerCredentialUuid,
              upstreamModel: base.upstreamModel,
              statusCode: noAnswer ? null : outcome.statusCode,
              error: outcome.error,
              latencyMs: Math.max(0, Math.round(outcome.endedAt - arrivedAt)),
            },
          ];
    const call: RecordedCall = {
      ...base,
      ...outcome,
      attempts,
      latencyMs: Math.max(0, Math.round(outcome.endedAt - arrivedAt)),
      costNanos: costNanos(deps.prices, base.upstreamModel, outcome.inputTokens, outcome.outputTokens),
    };
    try {
      // The spend totals move with the record, so spend read back always equals the sum of records.
      await db.transaction(async (trx) => {
        await repo.insert(trx, call);
        await deps.budgets.addSpend(trx, call);
      });
    } catch (err) {
      deps.log(err, 'could not record a model call');
    }
    for (const observer of deps.observers) observer(call);
  }

  /** One credential's model list, entries renamed `<credential name>/<id>`; null when it fails. */
  async function prefixedModels(credential: OpenedCredential, caller: AbortSignal): Promise<unknown[] | null> {
    // One slow upstream must not hold the whole list for the full proxy timeout.
    const signal = AbortSignal.any([
      caller,
      AbortSignal.timeout(Math.min(deps.upstream.timeoutMs, MODEL_LIST_TIMEOUT_MS)),
    ]);
    try {
      const res = await callUpstream(deps.upstream, credential, '/models', { method: 'GET', signal });
      const { answer, text } = await relayWhole(deps.upstream, res, signal, MODEL_LIST_MAX_BYTES);
      if (answer.status < 200 || answer.status >= 300) return null;
      const data = (JSON.parse(text) as { data?: unknown }).data;
      if (!Array.isArray(data)) return null;
      return data
        .filter((m): m is Record<string, unknown> => typeof m === 'object' && m !== null && typeof m.id === 'string')
        .map((m) => ({ ...m, id: `${credential.name}/${m.id}` }));
    } catch (err) {
      if (!caller.aborted) deps.log(err, `model list of credential ${credential.uuid} left out`);
      return null;
    }
  }

  /**
   * Every credential's prefixed models, asking at most MODEL_LIST_CONCURRENCY upstreams at once
   * and none after MODEL_LISTS_DEADLINE_MS: a user with many slow credentials holds a few
   * connections for a bounded time, not one per credential.
   */
  async function allModels(workspaceUuid: string, caller: AbortSignal): Promise<unknown[]> {
    const credentials = await deps.providers.openAll(workspaceUuid);
    const signal = AbortSignal.any([
      caller,
      AbortSignal.timeout(Math.min(deps.upstream.timeoutMs, MODEL_LISTS_DEADLINE_MS)),
    ]);
    const lists: Array<unknown[] | null> = credentials.map(() => null);
    let next = 0;
    const worker = async () => {
      while (next < credentials.length && !signal.aborted) {
        const at = next++;
        lists[at] = await prefixedModels(credentials[at] as OpenedCredential, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(MODEL_LIST_CONCURRENCY, credentials.length) }, worker));
    return lists.flatMap((list) => list ?? []);
  }

  return {
    /**
     * GET /models: with a credential named, its upstream list relayed as it is; otherwise the union
     * over the caller's credentials with ids prefixed, leaving out those whose upstream fails.
     */
    async models(workspaceUuid: string, credentialRef: string | undefined, signal: AbortSignal): Promise<ProxyAnswer> {
      if (credentialRef !== undefined) {
        const credential = await deps.providers.resolve(workspaceUuid, credentialRef);
        if (!credential)
          throw proxyError(
            404,
            'X-Taskhook-Credential names none of your provider credentials',
            'credential_not_found',
          );
        const res = await callUpstream(deps.upstream, credential, '/models', { method: 'GET', signal });
        return (await relayWhole(deps.upstream, res, signal, MODEL_LIST_MAX_BYTES)).answer;
      }
      const data = await allModels(workspaceUuid, signal);
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ object: 'list', data }),
      };
    },

    /**
     * POST /chat/completions through the proxy. Errors before a credential is selected are thrown
     * (ProxyError, not recorded); from then on every outcome is recorded and answered.
     */
    async chatCompletions(req: ChatRequest, source: 'api' | 'runtime' = 'api'): Promise<ChatAnswer> {
      const arrivedAt = deps.clock.now();
      const body = checkChatBody(req.body);
      const task = req.task ?? (await attribution(req.workspaceUuid, req.taskId));
      const { credential, upstreamModel } = await select(req, body.model);
      const upstream = upstreamChatBody(body, upstreamModel);
      const base = {
        uuid: newId(),
        workspaceUuid: req.workspaceUuid,
        createdAt: iso(arrivedAt),
        source,
        model: body.model,
        upstreamModel,
        providerCredentialUuid: credential.uuid,
        stream: upstream.stream,
        agentUuid: task?.agentUuid ?? null,
        taskUuid: task?.taskUuid ?? null,
        platformKeyUuid: req.platformKeyUuid ?? null,
        route: null,
        cacheHit: false,
        traceparent: req.traceparent ?? null,
        request: {
          temperature: body.temperature,
          maxTokens: body.max_completion_tokens ?? body.max_tokens,
          baseUrl: credential.baseUrl,
        },
      };
      const done = (outcome: CallOutcome) => record(base, arrivedAt, outcome);
      const refused = await checkBudgets(base, done);
      if (refused) return refused;
      void deps.providers.touch(credential.uuid, (err) => deps.log(err, 'could not record last_used_at'));
      try {
        const answer = await forward(credential, upstream, req.signal, done);
        return { ...answer, callId: base.uuid };
      } catch (err) {
        if (!(err instanceof ProxyError)) throw err;
        await done(failedOutcome(err, deps.clock.now()));
        return {
          status: err.status,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(err.body),
          callId: base.uuid,
        };
      }
    },
  };

  /**
   * Budgets, after the credential and the task are known and before anything goes upstream: a
   * reached limit answers 429 (recorded as `budget_exceeded`, no tokens, no cost); null otherwise.
   */
  async function checkBudgets(base: CallScopes & { uuid: string }, done: (o: CallOutcome) => Promise<void>) {
    const refusal = await deps.budgets.check(base);
    if (!refusal) return null;
    const now = deps.clock.now();
    await done(refusedOutcome(refusal, now));
    return { ...refusalAnswer(refusal, now), callId: base.uuid } satisfies ChatAnswer;
  }

  async function forward(
    credential: OpenedCredential,
    upstream: ReturnType<typeof upstreamChatBody>,
    signal: AbortSignal,
    done: (outcome: CallOutcome) => Promise<void>,
  ): Promise<ProxyAnswer> {
    const upstreamStartedAt = deps.clock.now();
    const res = await callUpstream(deps.upstream, credential, '/chat/completions', {
      method: 'POST',
      body: JSON.stringify(upstream.body),
      signal,
    });
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode >= 200 && res.statusCode < 300 && type.startsWith('text/event-stream')) {
      return relayStream(res, {
        callerWantsUsage: upstream.callerWantsUsage,
        maxEventBytes: deps.upstream.limits.maxEventBytes,
        maxStreamBytes: deps.upstream.limits.maxStreamBytes,
        signal,
        upstreamStartedAt,
        now: deps.clock.now,
        onEnd: done,
      });
    }
    const { answer, text, errorMessage } = await relayWhole(deps.upstream, res, signal);
    await done(wholeOutcome(res.statusCode, text, errorMessage, deps.clock.now()));
    return answer;
  }
}

/** The record of a call a budget refused: 429 `budget_exceeded`, nothing went upstream. */
function refusedOutcome(refusal: { message: string }, now: number): CallOutcome {
  const error = { code: 'budget_exceeded' as const, message: refusal.message };
  return { ...failedOutcome(new Error(refusal.message), now), statusCode: 429, error };
}

/** The record's view of a non-streamed answer. */
function wholeOutcome(status: number, text: string, errorMessage: string | null, now: number): CallOutcome {
  const ok = status >= 200 && status < 300;
  let facts = chunkFacts(null);
  if (ok) {
    try {
      facts = chunkFacts(JSON.parse(text));
    } catch {
      // not JSON: relayed as it is, nothing to count
    }
  }
  return {
    statusCode: status,
    error: ok ? null : { code: 'upstream_error', message: errorMessage ?? `upstream answered HTTP ${status}` },
    responseModel: facts.model,
    responseId: facts.id,
    finishReasons: facts.finishReasons,
    timeToFirstTokenMs: null,
    inputTokens: facts.usage?.input ?? null,
    outputTokens: facts.usage?.output ?? null,
    endedAt: now,
  };
}

export type SpotlightService = ReturnType<typeof createSpotlightService>;
