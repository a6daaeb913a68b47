import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { Dispatcher } from 'undici';
import { chunkFacts, createSseSplitter, SseEventTooLarge, sseData } from './proxy-fns.js';
import type { CallOutcome, ProxyAnswer } from './proxy-upstream.js';
import { generatedChars } from './usage-estimate-fns.js';

const TIMEOUT_CODES = new Set(['UND_ERR_BODY_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/** The Content-Type of every relayed stream (and so of a stored one). */
export const STREAM_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/**
 * Relays an upstream SSE answer event by event as it arrives (never buffered to the end), reading
 * each chunk for the record: the response model, the first token, the usage. The usage-only chunk
 * the proxy asked for is dropped unless the caller asked for it too. A stream that fails after it
 * started ends with one error event and no [DONE]. `onEnd` runs (the record and its cost are
 * committed) before the final event ([DONE] or the error) is sent, so a caller that has read the
 * whole stream finds the record and is checked against its cost.
 *
 * Nothing is held without bound: one event may reach `maxEventBytes` and the whole answer
 * `maxStreamBytes`; past either the upstream request is dropped and the stream ends with an error
 * event (`upstream_error`) that names the limit, as does the call record.
 */
export function relayStream(
  res: Dispatcher.ResponseData,
  opts: {
    callerWantsUsage: boolean;
    maxEventBytes: number;
    maxStreamBytes: number;
    signal: AbortSignal;
    upstreamStartedAt: number;
    now: () => number;
    onEnd: (outcome: CallOutcome) => Promise<void>;
    /** Told of every upstream event in order (the usage-only chunk and [DONE] included): the cache keeps them. */
    onEvent?: ((event: string, usageOnly: boolean) => void) | undefined;
  },
): ProxyAnswer {
  const out = new PassThrough();
  const outcome: CallOutcome = {
    statusCode: 200,
    error: null,
    responseModel: null,
    responseId: null,
    finishReasons: [],
    timeToFirstTokenMs: null,
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    cacheWrite1hTokens: 0,
    withoutUsage: null,
    endedAt: 0,
  };
  let first = true;
  // For the estimate when no usage chunk comes: generated characters of every delta received.
  let usageSeen = false;
  let outputChars = 0;

  /** Reads one event for the record; true when it is the usage-only chunk. */
  function inspect(event: string): boolean {
    const data = sseData(event);
    if (data === null || data === '[DONE]') return false;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return false;
    }
    const facts = chunkFacts(parsed);
    if (first) {
      outcome.responseModel = facts.model;
      outcome.responseId = facts.id;
      first = false;
    }
    if (facts.hasToken && outcome.timeToFirstTokenMs === null) {
      outcome.timeToFirstTokenMs = Math.max(0, opts.now() - opts.upstreamStartedAt);
    }
    outcome.finishReasons.push(...facts.finishReasons);
    outputChars += generatedChars(parsed, 'delta');
    if (facts.usage) {
      usageSeen = true;
      outcome.inputTokens = facts.usage.input;
      outcome.outputTokens = facts.usage.output;
      outcome.cacheReadTokens = facts.usage.cacheRead;
      outcome.cacheWriteTokens = facts.usage.cacheWrite;
      outcome.cacheWrite1hTokens = facts.usage.cacheWrite1h;
    }
    return facts.usageOnly;
  }

  async function write(text: string) {
    if (out.destroyed) return;
    if (!out.write(text)) await once(out, 'drain', { signal: opts.signal });
  }

  // The final event (`data: [DONE]`, or the error event of a broken stream) is held until the
  // record, and with it the call's cost, is committed: a caller that has read the whole answer and
  // calls again is checked against this call's spend.
  let final: string | null = null;

  /** Relays one event, holding back [DONE]; an event after it lets it go first (order kept). */
  async function relay(event: string) {
    if (final !== null) {
      await write(final);
      final = null;
    }
    if (sseData(event) === '[DONE]') {
      opts.onEvent?.(event, false);
      final = `${event}\n\n`;
      return;
    }
    const usageOnly = inspect(event);
    opts.onEvent?.(event, usageOnly);
    if (!usageOnly || opts.callerWantsUsage) await write(`${event}\n\n`);
  }

  async function pump() {
    const splitter = createSseSplitter(opts.maxEventBytes);
    const decoder = new TextDecoder();
    let received = 0;
    try {
      for await (const chunk of res.body) {
        received += (chunk as Buffer).length;
        if (received > opts.maxStreamBytes) throw new StreamTooLarge(opts.maxStreamBytes);
        for (const event of splitter.push(decoder.decode(chunk as Buffer, { stream: true }))) await relay(event);
      }
      const rest = splitter.push(`${decoder.decode()}\n\n`).join('');
      if (rest.trim() !== '') await relay(rest);
    } catch (err) {
      fail(err);
    }
    outcome.endedAt = opts.now();
    if (!usageSeen) outcome.withoutUsage = { outputChars };
    await opts.onEnd(outcome).catch(() => undefined);
    if (final !== null) await write(final).catch(() => undefined);
    out.end();
  }

  /** Records why the stream broke and, unless the caller left, holds a last event to tell it. */
  function fail(err: unknown) {
    if (opts.signal.aborted) {
      outcome.error = { code: 'client_closed', message: 'the caller closed the connection' };
      return;
    }
    const tooLarge = err instanceof SseEventTooLarge || err instanceof StreamTooLarge;
    // Stop reading what upstream still sends: the answer is over for the caller.
    if (tooLarge) res.body.destroy();
    const timeout = TIMEOUT_CODES.has((err as { code?: string }).code ?? '');
    const code = timeout ? 'upstream_timeout' : 'upstream_error';
    const message = tooLarge
      ? (err as Error).message
      : timeout
        ? 'Upstream stopped sending in time'
        : 'Upstream stream failed';
    outcome.error = { code, message };
    // A [DONE] held before the failure is not sent: the stream ends with the error alone.
    final = `data: ${JSON.stringify({ error: { message, type: 'upstream_error', param: null, code } })}\n\n`;
  }

  void pump();
  return {
    status: 200,
    headers: { 'content-type': STREAM_CONTENT_TYPE, 'cache-control': 'no-cache' },
    body: out,
  };
}

/** The streamed answer as a whole passed its cap. */
class StreamTooLarge extends Error {
  constructor(maxStreamBytes: number) {
    super(`Upstream answer is larger than ${maxStreamBytes} bytes (the proxy's limit for one streamed answer)`);
  }
}
