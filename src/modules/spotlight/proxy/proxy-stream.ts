import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { EventFacts, StreamReader } from './protocols/protocol.js';
import { createSseSplitter, SseEventTooLarge } from './proxy-fns.js';
import type { CallOutcome, ProxyAnswer } from './proxy-upstream.js';

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
    reader: StreamReader;
    /** A stream that ends without the protocol's terminal event broke. */
    requiresTerminal: boolean;
    callerWantsUsage: boolean;
    maxEventBytes: number;
    maxStreamBytes: number;
    signal: AbortSignal;
    upstreamStartedAt: number;
    now: () => number;
    onEnd: (outcome: CallOutcome) => Promise<void>;
    /** Told of every upstream event in order (the usage-only chunk and the final event included): the cache keeps them. */
    onEvent?: ((event: string, facts: EventFacts) => void) | undefined;
  },
): ProxyAnswer {
  const out = new PassThrough();
  const reader = opts.reader;
  let timeToFirstTokenMs: number | null = null;
  let error: CallOutcome['error'] = null;

  async function write(text: string) {
    if (out.destroyed) return;
    if (!out.write(text)) await once(out, 'drain', { signal: opts.signal });
  }

  // The final event (`data: [DONE]`, a Responses terminal event, or the error event of a broken
  // stream) is held until the record, and with it the call's cost, is committed: a caller that has
  // read the whole answer and calls again is checked against this call's spend.
  let final: string | null = null;

  /** Relays one event, holding back the final one; an event after it lets it go first (order kept). */
  async function relay(event: string) {
    if (final !== null) {
      await write(final);
      final = null;
    }
    const facts = reader.read(event);
    if (reader.firstToken && timeToFirstTokenMs === null) {
      timeToFirstTokenMs = Math.max(0, opts.now() - opts.upstreamStartedAt);
    }
    opts.onEvent?.(event, facts);
    if (facts.final) final = `${event}\n\n`;
    else if (!facts.usageOnly || opts.callerWantsUsage) await write(`${event}\n\n`);
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
      if (opts.requiresTerminal && !reader.complete) throw new EndedEarly();
      if (reader.failure !== null) error = { code: 'upstream_error', message: reader.failure };
    } catch (err) {
      fail(err);
    }
    const u = reader.usage;
    const outcome: CallOutcome = {
      statusCode: 200,
      error,
      responseModel: reader.model,
      responseId: reader.id,
      finishReasons: reader.finishReasons,
      timeToFirstTokenMs,
      inputTokens: u?.input ?? null,
      outputTokens: u?.output ?? null,
      cacheReadTokens: u?.cacheRead ?? null,
      cacheWriteTokens: u?.cacheWrite ?? null,
      cacheWrite1hTokens: u?.cacheWrite1h ?? 0,
      withoutUsage: u === null ? { outputChars: reader.outputChars } : null,
      endedAt: opts.now(),
    };
    await opts.onEnd(outcome).catch(() => undefined);
    if (final !== null) await write(final).catch(() => undefined);
    out.end();
  }

  /** Records why the stream broke and, unless the caller left, holds a last event to tell it. */
  function fail(err: unknown) {
    if (opts.signal.aborted) {
      error = { code: 'client_closed', message: 'the caller closed the connection' };
      return;
    }
    const tooLarge = err instanceof SseEventTooLarge || err instanceof StreamTooLarge;
    // Stop reading what upstream still sends: the answer is over for the caller.
    if (tooLarge) res.body.destroy();
    const timeout = TIMEOUT_CODES.has((err as { code?: string }).code ?? '');
    const code = timeout ? 'upstream_timeout' : 'upstream_error';
    const message =
      tooLarge || err instanceof EndedEarly
        ? (err as Error).message
        : timeout
          ? 'Upstream stopped sending in time'
          : 'Upstream stream failed';
    error = { code, message };
    // A final event held before the failure is not sent: the stream ends with the error alone.
    final = reader.brokenEvent(code, message);
  }

  void pump();
  return {
    status: 200,
    headers: { 'content-type': STREAM_CONTENT_TYPE, 'cache-control': 'no-cache' },
    body: out,
  };
}

/** The upstream closed a stream before the protocol's terminal event. */
class EndedEarly extends Error {
  constructor() {
    super('Upstream ended the stream before its final event');
  }
}

/** The streamed answer as a whole passed its cap. */
class StreamTooLarge extends Error {
  constructor(maxStreamBytes: number) {
    super(`Upstream answer is larger than ${maxStreamBytes} bytes (the proxy's limit for one streamed answer)`);
  }
}
