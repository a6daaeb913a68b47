import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../db/connect.js';
import type { AccountLanesStats } from '../../lib/account-lanes.js';
import type { Clock } from '../../lib/time.js';
import { createMetricsRepo } from './metrics-repo.js';
import { RequestDurations } from './request-durations.js';

/** Storage-derived gauges are read at most this often, however often Prometheus scrapes. */
const STORAGE_READ_EVERY_MS = 5000;

/** Seconds; request latencies from well under a millisecond (SQLite reads) to long polls. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The service's Prometheus registry: process and event-loop metrics, HTTP request durations,
 * rate-limit refusals, and gauges read from storage (tasks by state, queue depth, pending
 * callbacks and the age of the oldest). Instruments owned by other capabilities are added here
 * and incremented by them.
 */
export function createMetrics(deps: { db: Db; clock: Clock }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'taskhook_', eventLoopMonitoringPrecision: 10 });

  const httpDuration = new RequestDurations({
    name: 'taskhook_http_request_duration_seconds',
    help: 'Time from request to response, by route pattern and status class.',
    buckets: HTTP_BUCKETS,
    registry,
  });
  const rateLimited = new Counter({
    name: 'taskhook_rate_limit_refusals_total',
    help: 'Requests answered 429 because their scope used up its window.',
    registers: [registry],
  });

  const taskTransitions = new Counter({
    name: 'taskhook_task_transitions_total',
    help: 'Saved task changes by operation: submit, claim, complete, fail, retry, release, lease_expired, timeout, cancel, message, input_request, progress.',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const webhookDeliveries = new Counter({
    name: 'taskhook_webhook_deliveries_total',
    help: 'Requests to trigger webhook addresses, by answer status (202 accepted, 401 refused, 409/410 and so on).',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const webhookRefusalsUnlogged = new Counter({
    name: 'taskhook_webhook_refusals_unlogged_total',
    help: 'Requests to trigger addresses refused for their secret or signature and left out of the delivery log (each trigger logs at most 100 such refusals an hour).',
    registers: [registry],
  });

  const poolStats = deps.db.poolStats;
  if (poolStats) {
    new Gauge({
      name: 'taskhook_db_pool_connections',
      help: 'PostgreSQL pool connections by state (in_use, idle), and queries waiting for one (waiting).',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const { total, idle, waiting } = poolStats();
        this.set({ state: 'in_use' }, total - idle);
        this.set({ state: 'idle' }, idle);
        this.set({ state: 'waiting' }, waiting);
      },
    });
  }

  const queryDuration = new Histogram({
    name: 'taskhook_db_query_duration_seconds',
    help: 'Time of each database statement sent through the query builder.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  deps.db.onQuery((ms) => queryDuration.observe(ms / 1000));
  const callbackAttempts = new Counter({
    name: 'taskhook_callback_attempts_total',
    help: 'Callback delivery attempts by outcome: delivered, retrying (another attempt is scheduled) or gave_up.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });

  const fairness = createFairnessGauges(registry);
  const storage = createStorageGauges(registry, deps);
  return {
    registry,
    httpDuration,
    rateLimited,
    taskTransitions,
    webhookDeliveries,
    webhookRefusalsUnlogged,
    callbackAttempts,
    ...fairness,
    /** The exposition text; storage gauges are refreshed first when they are stale. */
    async render(): Promise<string> {
      await storage.refresh();
      return registry.metrics();
    },
  };
}

export interface OutboundCounts {
  inFlight: number;
  queued: number;
}

/**
 * Outbound fairness, all accounts together (a label per account would grow without bound): each
 * feature's requests in flight and waiting in their account's queue, and push runs in flight.
 */
function createFairnessGauges(registry: Registry) {
  const outbound = new Map<string, () => OutboundCounts>();
  let pushRuns: () => { inFlight: number; accountsAtCap: number } = () => ({ inFlight: 0, accountsAtCap: 0 });
  new Gauge({
    name: 'taskhook_outbound_requests',
    help: 'Outbound requests by feature (http_runtime, a2a_runtime, callbacks) and state: in_flight (in the shared connection pool) or queued (waiting for a slot of their account, TASKHOOK_OUTBOUND_PER_ACCOUNT).',
    labelNames: ['feature', 'state'] as const,
    registers: [registry],
    collect() {
      for (const [feature, read] of outbound) {
        const { inFlight, queued } = read();
        this.set({ feature, state: 'in_flight' }, inFlight);
        this.set({ feature, state: 'queued' }, queued);
      }
    },
  });
  new Gauge({
    name: 'taskhook_push_runs',
    help: 'Push runs on this instance: in_flight, and accounts_at_cap (accounts whose queued tasks wait because they have TASKHOOK_PUSH_RUNS_PER_ACCOUNT runs in flight).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { inFlight, accountsAtCap } = pushRuns();
      this.set({ state: 'in_flight' }, inFlight);
      this.set({ state: 'accounts_at_cap' }, accountsAtCap);
    },
  });
  let submits: () => AccountLanesStats = () => ({ inProgress: 0, waiting: 0, waitedTotal: 0 });
  new Gauge({
    name: 'taskhook_submits',
    help: "Submits on this instance: in_progress, and waiting (for a slot of their account's lane, TASKHOOK_SUBMITS_PER_ACCOUNT).",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { inProgress, waiting } = submits();
      this.set({ state: 'in_progress' }, inProgress);
      this.set({ state: 'waiting' }, waiting);
    },
  });
  new Counter({
    name: 'taskhook_submits_waited_total',
    help: "Submits that waited for a slot of their account's lane (TASKHOOK_SUBMITS_PER_ACCOUNT) before being worked on.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(submits().waitedTotal);
    },
  });
  return {
    /** Reports the submits' per-account lanes. */
    watchSubmits(read: () => AccountLanesStats) {
      submits = read;
    },
    /** Reports a feature's per-account outbound lanes under `feature`. */
    watchOutbound(feature: string, read: () => OutboundCounts) {
      outbound.set(feature, read);
    },
    /** Reports the push dispatcher's runs. */
    watchPushRuns(read: () => { inFlight: number; accountsAtCap: number }) {
      pushRuns = read;
    },
  };
}

function createStorageGauges(registry: Registry, deps: { db: Db; clock: Clock }) {
  const repo = createMetricsRepo();
  const tasks = new Gauge({
    name: 'taskhook_tasks',
    help: 'Tasks stored, by status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const queueDepth = new Gauge({
    name: 'taskhook_queue_depth',
    help: 'Tasks waiting for a worker, all agents together.',
    registers: [registry],
  });
  const pendingCallbacks = new Gauge({
    name: 'taskhook_callbacks_pending',
    help: 'Callback deliveries not yet delivered nor given up.',
    registers: [registry],
  });
  const oldestCallback = new Gauge({
    name: 'taskhook_callback_oldest_pending_age_seconds',
    help: 'Age of the oldest pending callback delivery (0 when none is pending).',
    registers: [registry],
  });
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | null = null;

  async function read() {
    const now = deps.clock.now();
    const snapshot = await repo.snapshot(deps.db.kysely);
    tasks.reset();
    for (const { status, count } of snapshot.tasksByStatus) tasks.set({ status }, count);
    queueDepth.set(snapshot.queueDepth);
    pendingCallbacks.set(snapshot.pendingCallbacks);
    oldestCallback.set(
      snapshot.oldestCallbackAt ? Math.max(0, (now - Date.parse(snapshot.oldestCallbackAt)) / 1000) : 0,
    );
    readAt = now;
  }

  return {
    /** Reads storage when the last read is older than STORAGE_READ_EVERY_MS; one read at a time. */
    async refresh() {
      if (deps.clock.now() - readAt < STORAGE_READ_EVERY_MS) return;
      reading ??= read().finally(() => {
        reading = null;
      });
      await reading;
    },
  };
}
