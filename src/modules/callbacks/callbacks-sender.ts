import { isIP } from 'node:net';
import { request } from 'undici';
import type { Db, Executor } from '../../db/connect.js';
import { scheduledDelaySeconds } from '../../lib/backoff.js';
import type { Log } from '../../lib/log.js';
import { createLoop } from '../../lib/loop.js';
import { isPrivateAddress } from '../../lib/outbound.js';
import type { FairOutbound } from '../../lib/outbound-fair.js';
import { retryAfterSeconds } from '../../lib/retry-after.js';
import { signatureHeader } from '../../lib/standard-webhooks.js';
import { type Clock, iso } from '../../lib/time.js';
import { callbackSpan, type ServiceSpan, type TaskTrace } from '../telemetry/service-spans-fns.js';
import { deriveSpanId, formatTraceparent } from '../telemetry/trace-context-fns.js';
import { classify, pickFair } from './callbacks-fns.js';
import type { Attempt, CallbackRow, CallbacksRepo } from './callbacks-repo.js';

const POLL_MS = 500;
const BATCH = 32;
/** Looks at the due deliveries per pump: each look after the first skips at least one more full account. */
const MAX_LOOKS = 8;

/** How the dispatcher finds a task's trace and records the span of an attempt (best-effort). */
export interface CallbackTracing {
  traceOf(taskUuid: string): Promise<TaskTrace | null>;
  record(workspaceUuid: string, spans: ServiceSpan[]): void;
}

/**
 * Sends due callbacks with bounded concurrency: at most `concurrency` attempts in flight, and at
 * most `perAccount` of them for one account, so one account's slow or hanging receivers hold only
 * its own slots while every other account's callbacks go out. Each delivery is leased before it
 * is sent, so instances sharing a database never send the same attempt twice; a sender that dies
 * leaves its lease to expire and the delivery is sent again, with the same webhook-id.
 */
export function createCallbackSender(deps: {
  db: Db;
  repo: CallbacksRepo;
  signingSecrets: (workspaceUuid: string) => Promise<string[]>;
  /** The outbound guard's per-account lanes. */
  outbound: Pick<FairOutbound, 'forAccount'>;
  allowPrivate: boolean;
  schedule: number[];
  timeoutMs: number;
  concurrency: number;
  /** Attempts of one account in flight at once (on this instance). */
  perAccount: number;
  clock: Clock;
  log: Log;
  /** The service's own spans: each attempt is a span of its task's trace, announced in `traceparent`. */
  tracing?: CallbackTracing;
  /** Hears each recorded attempt's outcome: delivered, retrying (another attempt is due) or gave_up. */
  onAttempt?: (outcome: 'delivered' | 'retrying' | 'gave_up') => void;
  /** Opens a push delivery's sealed headers. */
  openHeaders: (sealed: string) => Record<string, string>;
  /** In the recording transaction, when a push receiver answered 410: its config goes. */
  onPushGone: (trx: Executor, configUuid: string) => Promise<void>;
}) {
  const { db, repo } = deps;
  const leaseMs = deps.timeoutMs + 5000;
  let inFlight = 0;
  const inFlightByWorkspace = new Map<string, number>();
  let stopped = true;
  const sending = new Set<Promise<void>>();

  async function attempt(
    row: CallbackRow,
    traceparent: string | null,
  ): Promise<Attempt & { retryAfter: number | null }> {
    const startedAt = deps.clock.now();
    const started = performance.now();
    const done = (status_code: number | null, error: string | null, retryAfter: number | null = null) => ({
      at: iso(startedAt),
      status_code,
      duration_ms: Math.round(performance.now() - started),
      error,
      retryAfter,
    });
    const host = new URL(row.url).hostname.replace(/^\[|\]$/g, '');
    if (!deps.allowPrivate && isIP(host) && isPrivateAddress(host)) return done(null, 'private address refused');
    const timestamp = Math.floor(startedAt / 1000);
    try {
      const res = await request(row.url, {
        method: 'POST',
        body: row.payload,
        dispatcher: deps.outbound.forAccount(row.workspaceUuid),
        signal: AbortSignal.timeout(deps.timeoutMs),
        headers: {
          ...(row.push ? deps.openHeaders(row.push.secretHeaders) : {}),
          'content-type': row.push ? 'application/a2a+json' : 'application/json',
          'user-agent': 'taskhook-callbacks/1',
          'webhook-id': row.uuid,
          ...(traceparent ? { traceparent } : {}),
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(
            row.uuid,
            timestamp,
            row.payload,
            await deps.signingSecrets(row.workspaceUuid),
          ),
        },
      });
      await res.body.dump().catch(() => undefined);
      const header = res.headers['retry-after'];
      const retryAfter = retryAfterSeconds(header, deps.clock.now());
      const ok = classify(res.statusCode) === 'delivered';
      return done(res.statusCode, ok ? null : `HTTP ${res.statusCode}`, retryAfter);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const reason = e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timed out' : (e.code ?? e.message);
      return done(null, String(reason).slice(0, 200));
    }
  }

  /** The task's trace and this attempt's span id; null when tracing is off or the lookup failed. */
  async function traceOfAttempt(row: CallbackRow) {
    if (!deps.tracing) return null;
    const trace = await deps.tracing.traceOf(row.taskUuid).catch((err) => {
      deps.log.warn({ err, callback: row.uuid }, 'callback trace lookup failed');
      return null;
    });
    return trace && { trace, spanId: deriveSpanId('callback', row.uuid, String(row.attempts.length + 1)) };
  }

  function recordSpan(row: CallbackRow, traced: { trace: TaskTrace; spanId: string }, result: Attempt) {
    const startMs = Date.parse(result.at);
    deps.tracing?.record(row.workspaceUuid, [
      callbackSpan(traced.trace, {
        taskUuid: row.taskUuid,
        spanId: traced.spanId,
        eventType: row.eventType,
        url: row.url,
        deliveryId: row.uuid,
        attempt: row.attempts.length + 1,
        statusCode: result.status_code,
        startMs,
        endMs: startMs + result.duration_ms,
      }),
    ]);
  }

  async function deliver(row: CallbackRow) {
    const traced = await traceOfAttempt(row);
    const result = await attempt(row, traced && formatTraceparent(traced.trace.traceId, traced.spanId));
    if (traced) recordSpan(row, traced, result);
    const { retryAfter, ...entry } = result;
    const attempts = [...row.attempts, entry];
    const outcome = classify(entry.status_code);
    const nowMs = deps.clock.now();
    let status: CallbackRow['status'] = outcome === 'delivered' ? 'delivered' : 'failed';
    let nextAttemptAt: string | null = null;
    if (outcome === 'retry') {
      const delay = scheduledDelaySeconds(deps.schedule, attempts.length);
      if (delay !== null) {
        status = 'pending';
        nextAttemptAt = iso(nowMs + Math.max(delay, retryAfter ?? 0) * 1000);
      }
    }
    await db.transaction(async (trx) => {
      await repo.recordAttempt(trx, row.uuid, { attempts, status, nextAttemptAt, now: iso(nowMs) });
      if (!row.push) return;
      // A push receiver that is gone (410) loses its config; a config deleted meanwhile sends no retry.
      if (outcome === 'gone') {
        await repo.endPushConfig(trx, row.push.configUuid, iso(nowMs));
        await deps.onPushGone(trx, row.push.configUuid);
      } else await repo.failEnded(trx, row.push.configUuid, iso(nowMs));
    });
    deps.onAttempt?.(status === 'delivered' ? 'delivered' : status === 'pending' ? 'retrying' : 'gave_up');
  }

  /**
   * Leases up to `room` due deliveries within the per-account bound, oldest first. An account
   * with no slot left is skipped in the next look, so its backlog cannot hide others' deliveries.
   */
  function claimFair(room: number): Promise<CallbackRow[]> {
    const nowMs = deps.clock.now();
    return db.transaction(async (trx) => {
      const held = new Map(inFlightByWorkspace);
      const skip = new Set([...held].filter(([, n]) => n >= deps.perAccount).map(([user]) => user));
      const chosen: CallbackRow[] = [];
      for (let look = 0; look < MAX_LOOKS && chosen.length < room; look++) {
        const want = Math.min(room - chosen.length, BATCH);
        const due = await repo.lockDue(trx, iso(nowMs), want, [...skip]);
        const { take, full } = pickFair(due, held, deps.perAccount, want);
        await repo.lease(
          trx,
          take.map((r) => r.uuid),
          iso(nowMs + leaseMs),
        );
        for (const row of take) {
          chosen.push({ ...row, leaseUntil: iso(nowMs + leaseMs) });
          held.set(row.workspaceUuid, (held.get(row.workspaceUuid) ?? 0) + 1);
        }
        for (const user of full) skip.add(user);
        if (due.length < want || take.length === 0) break;
      }
      return chosen;
    });
  }

  function count(workspaceUuid: string, delta: number) {
    const n = (inFlightByWorkspace.get(workspaceUuid) ?? 0) + delta;
    if (n > 0) inFlightByWorkspace.set(workspaceUuid, n);
    else inFlightByWorkspace.delete(workspaceUuid);
  }

  /** Sends what is due while there is room; goes on while each look fills every free slot. */
  async function pump() {
    for (;;) {
      const room = Math.min(deps.concurrency - inFlight, BATCH);
      if (room <= 0 || stopped) return;
      const due = await claimFair(room);
      for (const row of due) {
        inFlight++;
        count(row.workspaceUuid, 1);
        const p: Promise<void> = deliver(row)
          .catch((err) => deps.log.warn({ err, callback: row.uuid }, 'callback delivery failed to record'))
          .finally(() => {
            inFlight--;
            count(row.workspaceUuid, -1);
            sending.delete(p);
            loop.nudge();
          });
        sending.add(p);
      }
      if (due.length < room) return;
    }
  }

  // Polls for due deliveries; a commit that queued one, or a freed slot, nudges it sooner.
  const loop = createLoop({
    name: 'callback dispatch',
    intervalMs: POLL_MS,
    run: pump,
    log: deps.log,
    immediate: true,
  });

  /** Leases the deliveries due now (up to one batch) and sends them; resolves once each attempt is recorded. */
  async function runOnce(): Promise<number> {
    const nowMs = deps.clock.now();
    const due = await db.transaction((trx) => repo.claimDue(trx, iso(nowMs), iso(nowMs + leaseMs), BATCH));
    await Promise.all(due.map(deliver));
    return due.length;
  }

  return {
    /** Look for due deliveries now (after a commit that queued one). */
    nudge: () => loop.nudge(),
    runOnce,
    start() {
      stopped = false;
      loop.start();
    },
    /** Stops looking for work and waits for attempts in flight to be recorded. */
    async stop() {
      stopped = true;
      await loop.stop();
      await Promise.all(sending);
    },
  };
}
