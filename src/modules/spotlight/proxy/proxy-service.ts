import type { Db, Executor } from '../../../db/connect.js';
import { newId } from '../../../lib/ids.js';
import { type Clock, iso } from '../../../lib/time.js';
import type { ProvidersService } from '../../providers/providers-service.js';
import { refusalAnswer, unpricedAnswer, unpricedMessage } from '../budgets/budgets-fns.js';
import type { SpendOf } from '../budgets/budgets-repo.js';
import type { BudgetsService, CallScopes } from '../budgets/budgets-service.js';
import { createCapturePool, replayAnswer, streamCapture, wholeEntry } from '../cache/cache-answers.js';
import { cacheKey, cachePolicySeconds, parseCacheHeader } from '../cache/cache-key-fns.js';
import type { ResponseCache } from '../cache/cache-store.js';
import type { AdmissionControl } from '../limits/limits-admission.js';
import type { CallObserver, RecordedCall } from '../usage/call-spans.js';
import type { CallsRepo } from '../usage/calls-repo.js';
import type { CallAttempt } from '../usage/calls-rows.js';
import { costNanos, type PriceTable, priceOf } from '../usage/prices.js';
import { chatProtocol } from './protocols/chat-protocol.js';
import type { Protocol } from './protocols/protocol.js';
import { responsesProtocol } from './protocols/responses-protocol.js';
import { attemptTargets, type Target } from './proxy-attempts.js';
import { proxyError } from './proxy-fns.js';
import { createModelLists } from './proxy-models.js';
import { admitCall, metaOf, refusedOutcome } from './proxy-record-fns.js';
import { checkAllowlist, createSelection, keyTarget, ROUTE_PREFIX, type RouteLookup } from './proxy-selection.js';
import { STREAM_CONTENT_TYPE } from './proxy-stream.js';
import { bareOutcome, type CallOutcome, type ProxyAnswer, type UpstreamDeps } from './proxy-upstream.js';
import { estimatedTokens } from './usage-estimate-fns.js';

/** Who calls and for what: the proxy's request, as plain data. */
export interface ChatRequest {
  workspaceUuid: string;
  body: unknown;
  /** X-Taskhook-Credential. */
  credential?: string | undefined;
  /** X-Taskhook-Task-Id. */
  taskId?: string | undefined;
  /** X-Taskhook-Cache (absent: the route's policy, if any). */
  cache?: string | string[] | undefined;
  /** The route an `openai` runtime names by uuid (its body's model is then ignored). */
  routeUuid?: string | undefined;
  /** The platform key that authenticated the request (null or absent: a session, or the runtime). */
  platformKeyUuid?: string | null | undefined;
  /** That key's model allowlist (null or absent: every model). */
  allowedModels?: readonly string[] | null | undefined;
  /**
   * The task a model runtime call serves (already known to be the workspace's); `admitted` when
   * the agent's rate limits admitted the run before its task was handed out.
   */
  task?: { taskUuid: string; agentUuid: string; admitted?: boolean } | undefined;
  traceparent?: string | undefined;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
}

export interface ChatAnswer extends ProxyAnswer {
  callId: string | null;
  /** Set when the proxy itself refused the call before anything went upstream. */
  refused?: 'budget_exceeded' | 'model_not_priced' | undefined;
}

/** The model proxy: credential or route selection, the cache, budgets, forwarding, one record per call. */
export function createProxyService(deps: {
  db: Db;
  repo: CallsRepo;
  /** The task of X-Taskhook-Task-Id with its agent, when it is the workspace's (the tasks room answers). */
  findTask: (workspaceUuid: string, taskUuid: string) => Promise<{ uuid: string; agent_uuid: string } | undefined>;
  providers: Pick<ProvidersService, 'resolve' | 'touch' | 'openAll'>;
  routes: RouteLookup;
  cache: ResponseCache;
  upstream: UpstreamDeps;
  clock: Clock;
  prices: PriceTable;
  observers: CallObserver[];
  log: (err: unknown, msg: string) => void;
  /** Budgets: the check before a call goes upstream, and the spend each record adds (same transaction). */
  budgets: Pick<BudgetsService, 'check'> & { addSpend: (trx: Executor, call: SpendOf) => Promise<void> };
  /** RPM/TPM limits of keys and agents: admission before the cache, tokens added once known. */
  admission: Pick<AdmissionControl, 'admit'>;
}) {
  const { db, repo } = deps;

  // Streams being collected for the cache hold at most the cache's bound on top of it.
  const capturePool = createCapturePool(deps.cache.maxBytes);
  const touch = (credentialUuid: string) =>
    void deps.providers.touch(credentialUuid, (err) => deps.log(err, 'could not record last_used_at'));
  const { attribution, select } = createSelection({
    findTask: deps.findTask,
    providers: deps.providers,
    routes: deps.routes,
  });

  type Base = Omit<RecordedCall, keyof CallOutcome | 'costNanos' | 'latencyMs' | 'attempts' | 'usageEstimated'>;

  /**
   * Writes the record (and tells the observers); a failure to record never fails the answer. A 2xx
   * answer without usage is charged an estimate from `promptChars` (the request's) and the generated
   * text received.
   */
  async function record(
    base: Base,
    arrivedAt: number,
    outcome: CallOutcome,
    attempts: CallAttempt[],
    promptChars = 0,
  ): Promise<RecordedCall> {
    const { withoutUsage, cacheWrite1hTokens, ...rest } = outcome;
    const estimated = !base.cacheHit && withoutUsage !== null;
    const inputTokens = estimated ? estimatedTokens(promptChars) : rest.inputTokens;
    const outputTokens = estimated ? estimatedTokens(withoutUsage.outputChars) : rest.outputTokens;
    const call: RecordedCall = {
      ...base,
      ...rest,
      inputTokens,
      outputTokens,
      usageEstimated: estimated,
      attempts,
      latencyMs: Math.max(0, Math.round(outcome.endedAt - arrivedAt)),
      costNanos: base.cacheHit
        ? 0
        : costNanos(deps.prices, base.upstreamModel, inputTokens, outputTokens, {
            read: estimated ? null : rest.cacheReadTokens,
            write: estimated ? null : rest.cacheWriteTokens,
            write1h: estimated ? 0 : cacheWrite1hTokens,
          }),
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
    return call;
  }

  /** The record's fields that name the target which gave the answer. */
  const targetFields = (target: Target) => ({
    providerCredentialUuid: target.credential.uuid,
    upstreamModel: target.upstreamModel,
  });

  const listModels = createModelLists({
    providers: deps.providers,
    upstream: deps.upstream,
    routes: deps.routes.list,
    log: deps.log,
  });

  return {
    /** GET /models: see createModelLists. */
    models: listModels,

    /** POST /chat/completions through the proxy (see `call`). */
    chatCompletions: (req: ChatRequest, source: 'api' | 'runtime' = 'api') => call(chatProtocol, req, source),

    /** POST /responses through the proxy (see `call`). */
    responses: (req: ChatRequest) => call(responsesProtocol, req, 'api'),
  };

  /**
   * One model call of any endpoint kind. Errors before a credential or route is selected are
   * thrown (ProxyError, not recorded); from then on every outcome is recorded and answered. In
   * order: the cache (a hit answers at once), the budgets, then each target until one answers.
   */
  async function call(protocol: Protocol, req: ChatRequest, source: 'api' | 'runtime'): Promise<ChatAnswer> {
    const arrivedAt = deps.clock.now();
    const body = protocol.checkBody(req.body);
    const cacheHeader = parseCacheHeader(req.cache);
    if (cacheHeader.kind === 'invalid')
      throw proxyError(400, 'X-Taskhook-Cache must be max-age=<1-86400> or no-store', 'invalid_cache_header');
    // In order: the selection's refusals, the key's allowlist, then the task's.
    const sel = await select(req, body.model);
    checkAllowlist(req.allowedModels, sel);
    const task = req.task ?? (await attribution(req.workspaceUuid, req.taskId));
    const first = sel.targets[0] as Target;
    const upstream = protocol.upstreamBody(body, first.upstreamModel);
    const base: Base = {
      uuid: newId(),
      workspaceUuid: req.workspaceUuid,
      createdAt: iso(arrivedAt),
      source,
      api: protocol.api,
      model: sel.route ? `${ROUTE_PREFIX}${sel.route.name}` : body.model,
      ...targetFields(first),
      stream: upstream.stream,
      agentUuid: task?.agentUuid ?? null,
      taskUuid: task?.taskUuid ?? null,
      platformKeyUuid: req.platformKeyUuid ?? null,
      route: sel.route && { uuid: sel.route.uuid, name: sel.route.name },
      cacheHit: false,
      traceparent: req.traceparent ?? null,
      request: {
        temperature: body.temperature,
        maxTokens: protocol.maxTokens(body),
        baseUrl: first.credential.baseUrl,
      },
    };
    // Rate limits: after attribution, before the cache; a refusal is not recorded.
    const admitted = await admitCall(deps.admission, base, req.task?.admitted === true);
    const limitHeaders = admitted.headers;
    const answered = (answer: ProxyAnswer): ChatAnswer => ({
      ...answer,
      headers: { ...answer.headers, ...limitHeaders },
      callId: base.uuid,
    });

    const policy = cachePolicySeconds(cacheHeader, sel.route?.cacheTtlSeconds ?? null);
    // A call whose answer depends on state kept upstream passes the cache by (header `bypass`).
    const bypass = policy !== null && !protocol.cacheable(body);
    const kind = protocol === chatProtocol ? undefined : { api: protocol.api, ignored: protocol.ignoredInKey };
    const key = policy === null || bypass ? null : cacheKey(req.workspaceUuid, keyTarget(sel), body, kind);
    if (key !== null && policy !== null) {
      const entry = deps.cache.lookup(key, policy);
      if (entry) {
        // The target that gave the stored answer (for a route, maybe not the first).
        const replayed = sel.targets.find((t) => t.credential.uuid === entry.meta.credentialUuid) ?? first;
        const hit: Base = {
          ...base,
          cacheHit: true,
          providerCredentialUuid: entry.meta.credentialUuid ?? base.providerCredentialUuid,
          upstreamModel: entry.meta.upstreamModel ?? base.upstreamModel,
          request: { ...base.request, baseUrl: replayed.credential.baseUrl },
        };
        const now = deps.clock.now();
        await record(hit, arrivedAt, { ...bareOutcome(200, null, now), responseModel: entry.meta.responseModel }, []);
        return answered(replayAnswer(entry, deps.cache.ageSeconds(entry), upstream.callerWantsUsage));
      }
    }
    const marked = (answer: ProxyAnswer): ChatAnswer =>
      answered(
        key === null && !bypass
          ? answer
          : { ...answer, headers: { ...answer.headers, 'x-taskhook-cache': bypass ? 'bypass' : 'miss' } },
      );

    const { refusal, applies } = await deps.budgets.check(base satisfies CallScopes);
    if (refusal) {
      const now = deps.clock.now();
      await record(base, arrivedAt, refusedOutcome('budget_exceeded', 429, refusal.message, now), []);
      return { ...marked(refusalAnswer(refusal, now)), refused: 'budget_exceeded' };
    }
    // A budget cannot count what has no price: every target must be priced (checked once).
    const unpriced = applies ? sel.targets.find((t) => !priceOf(deps.prices, t.upstreamModel)) : undefined;
    if (unpriced) {
      const message = unpricedMessage(unpriced.upstreamModel);
      const fields = { ...base, ...targetFields(unpriced) };
      fields.request = { ...base.request, baseUrl: unpriced.credential.baseUrl };
      await record(fields, arrivedAt, refusedOutcome('model_not_priced', 400, message, deps.clock.now()), []);
      return { ...marked(unpricedAnswer(message)), refused: 'model_not_priced' };
    }
    touch(first.credential.uuid);
    const capture = key === null ? null : streamCapture(capturePool);
    const attempted = await attemptTargets(deps.upstream, {
      protocol,
      targets: sel.targets,
      fallBackOn: sel.route?.retryOn ?? [],
      body: upstream.body,
      callerWantsUsage: upstream.callerWantsUsage,
      signal: req.signal,
      onEvent: capture?.onEvent,
      onEnd: async (target, outcome, attempts) => {
        // The fallback targets that were tried (the first was marked before it was called).
        for (const uuid of new Set(attempts.map((a) => a.providerCredentialUuid)))
          if (uuid !== first.credential.uuid) touch(uuid);
        const fields = { ...base, ...targetFields(target) };
        fields.request = { ...base.request, baseUrl: target.credential.baseUrl };
        const recorded = await record(fields, arrivedAt, outcome, attempts, protocol.promptChars(body));
        await admitted.settle((recorded.inputTokens ?? 0) + (recorded.outputTokens ?? 0));
        // A stream is kept only when it ended with [DONE], without error, the caller still there.
        const entry = capture?.finish(outcome.error === null && !req.signal.aborted, STREAM_CONTENT_TYPE) ?? null;
        if (key !== null && policy !== null && entry) {
          deps.cache.store(key, entry, metaOf(target, outcome), policy);
        }
      },
    });
    // Never an answer whose caller has gone meanwhile.
    if (
      key !== null &&
      policy !== null &&
      attempted.kind === 'whole' &&
      attempted.text !== null &&
      !req.signal.aborted
    ) {
      const entry = wholeEntry(attempted.answer, attempted.text, protocol.storableWhole);
      if (entry) deps.cache.store(key, entry, metaOf(attempted.target, attempted.outcome), policy);
    }
    return marked(attempted.answer);
  }
}

export type ProxyService = ReturnType<typeof createProxyService>;
