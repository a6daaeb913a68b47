import type { OpenedCredential } from '../../providers/providers-service.js';
import type { CallAttempt } from '../usage/calls-rows.js';
import type { EventFacts, Protocol } from './protocols/protocol.js';
import { ProxyError } from './proxy-fns.js';
import { relayStream } from './proxy-stream.js';
import {
  type CallOutcome,
  callUpstream,
  failedOutcome,
  type ProxyAnswer,
  relayWhole,
  type UpstreamDeps,
  wholeOutcome,
} from './proxy-upstream.js';

/** The failures a route may fall back on (20.3's `retry_on` values). */
export type Fallback = '429' | '5xx' | 'timeout' | 'connection';

/** One upstream to try: a credential and the model it is asked for. */
export interface Target {
  credential: OpenedCredential;
  upstreamModel: string;
}

/** The answer of a call, the target that gave it, and how it ends. */
export interface Attempted {
  answer: ProxyAnswer;
  target: Target;
  /**
   * A whole answer or a failure was recorded before this returns; a stream is recorded from inside
   * the relay, before its final event goes out (see relayStream).
   */
  kind: 'whole' | 'failed' | 'stream';
  /** The body as text for a whole answer (what the cache stores), else null. */
  text: string | null;
  /** What was recorded of a whole answer or a failure; null for a stream (recorded as it ends). */
  outcome: CallOutcome | null;
}

/** What the attempt loop needs besides the upstream itself. */
export interface AttemptOptions {
  protocol: Protocol;
  targets: readonly Target[];
  /** Failures that move on to the next target; [] for a plain call (one target). */
  fallBackOn: readonly Fallback[];
  /** The caller's body; `model` is set per target. */
  body: Record<string, unknown>;
  callerWantsUsage: boolean;
  signal: AbortSignal;
  /**
   * Called once per call with the answering target, its outcome and every attempt made; it writes
   * the record. For a stream it runs before the stream's final event.
   */
  onEnd: (target: Target, outcome: CallOutcome, attempts: CallAttempt[]) => Promise<void>;
  /** Every event of a stream that is relayed (for the cache). */
  onEvent?: ((event: string, facts: EventFacts) => void) | undefined;
}

/** Which `retry_on` class a failed exchange is in; null when it is none of them. */
export function fallbackOf(outcome: { statusCode: number | null; errorCode: string | null }): Fallback | null {
  if (outcome.errorCode === 'upstream_timeout') return 'timeout';
  if (outcome.errorCode === 'upstream_unreachable') return 'connection';
  if (outcome.statusCode === 429) return '429';
  if (outcome.statusCode !== null && outcome.statusCode >= 500 && outcome.statusCode <= 599) return '5xx';
  return null;
}

/**
 * Calls the targets in order until one gives an answer that is not a fallback failure (or none is
 * left), and relays that answer as a plain call would. Nothing reaches the caller before the
 * answering attempt is known: a non-streamed body is read whole first, and a stream becomes final
 * as soon as its upstream answered 2xx (a later break ends it, with no further attempt). A caller
 * that leaves stops the loop.
 */
export async function attemptTargets(deps: UpstreamDeps, opts: AttemptOptions): Promise<Attempted> {
  const attempts: CallAttempt[] = [];
  const last = opts.targets.length - 1;
  for (let i = 0; ; i++) {
    const target = opts.targets[i] as Target;
    const startedAt = deps.now();
    let upstreamStatus: number | null = null;
    const canFallBack = (f: Fallback | null) =>
      i < last && f !== null && opts.fallBackOn.includes(f) && !opts.signal.aborted;
    const attempt = (statusCode: number | null, error: CallOutcome['error'], endedAt: number): CallAttempt => ({
      providerCredentialUuid: target.credential.uuid,
      upstreamModel: target.upstreamModel,
      statusCode,
      error,
      latencyMs: Math.max(0, Math.round(endedAt - startedAt)),
    });
    try {
      const res = await callUpstream(deps, target.credential, opts.protocol.path, {
        method: 'POST',
        body: JSON.stringify({ ...opts.body, model: target.upstreamModel }),
        signal: opts.signal,
      });
      upstreamStatus = res.statusCode;
      const type = String(res.headers['content-type'] ?? '');
      if (res.statusCode >= 200 && res.statusCode < 300 && type.startsWith('text/event-stream')) {
        const answer = relayStream(res, {
          reader: opts.protocol.streamReader(),
          requiresTerminal: opts.protocol.requiresTerminal,
          callerWantsUsage: opts.callerWantsUsage,
          maxEventBytes: deps.limits.maxEventBytes,
          maxStreamBytes: deps.limits.maxStreamBytes,
          signal: opts.signal,
          upstreamStartedAt: startedAt,
          now: deps.now,
          onEvent: opts.onEvent,
          onEnd: (outcome) =>
            opts.onEnd(target, outcome, [...attempts, attempt(res.statusCode, outcome.error, outcome.endedAt)]),
        });
        return { answer, target, kind: 'stream', text: null, outcome: null };
      }
      const { answer, text, errorMessage } = await relayWhole(deps, res, opts.signal);
      const outcome = wholeOutcome(opts.protocol, res.statusCode, text, errorMessage, deps.now());
      attempts.push(attempt(res.statusCode, outcome.error, outcome.endedAt));
      if (canFallBack(fallbackOf({ statusCode: res.statusCode, errorCode: null }))) continue;
      await opts.onEnd(target, outcome, attempts);
      return { answer, target, kind: 'whole', text, outcome };
    } catch (err) {
      if (!(err instanceof ProxyError)) throw err;
      const outcome = failedOutcome(err, deps.now(), upstreamStatus);
      // The upstream's own status when its headers came (a body that broke or was too large), else none.
      attempts.push(attempt(upstreamStatus, outcome.error, outcome.endedAt));
      if (canFallBack(fallbackOf({ statusCode: upstreamStatus, errorCode: outcome.error?.code ?? null }))) continue;
      await opts.onEnd(target, outcome, attempts);
      return { answer: errorAnswer(err), target, kind: 'failed', text: null, outcome };
    }
  }
}

/** The proxy's own error answer (502/504/499) in OpenAI's shape. */
const errorAnswer = (err: ProxyError): ProxyAnswer => ({
  status: err.status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(err.body),
});
