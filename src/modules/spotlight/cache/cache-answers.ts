import { Readable } from 'node:stream';
import type { EventFacts } from '../proxy/protocols/protocol.js';
import type { ProxyAnswer } from '../proxy/proxy-upstream.js';
import { type CachedAnswer, type CacheEntry, ENTRY_OVERHEAD_BYTES } from './cache-store.js';

/**
 * The response cache at the proxy's edge: what a hit answers, and which answers of a miss are
 * kept. The store itself (bounds, LRU, expiry) is cache-store.ts; the key is cache-key-fns.ts.
 */

/**
 * The answer of a hit: the stored body byte for byte, or the stored stream's events in order with
 * `data: [DONE]` last, the usage-only chunk only for a caller that asked for usage itself.
 */
export function replayAnswer(entry: CacheEntry, ageSeconds: number, callerWantsUsage: boolean): ProxyAnswer {
  const headers = { 'content-type': entry.answer.contentType, 'x-taskhook-cache': 'hit', age: String(ageSeconds) };
  const answer = entry.answer;
  if (answer.kind === 'json') return { status: 200, headers, body: answer.body };
  const events = answer.events
    .filter((_, i) => callerWantsUsage || i !== answer.usageEventIndex)
    .map((event) => `${event}\n\n`);
  return { status: 200, headers: { ...headers, 'cache-control': 'no-cache' }, body: Readable.from(events) };
}

/**
 * A non-streamed answer worth keeping: a 200 JSON body its protocol calls complete (a chat
 * completion with `choices`, a Responses object whose status is `completed`).
 */
export function wholeEntry(
  answer: ProxyAnswer,
  text: string,
  storable: (parsed: unknown) => boolean,
): CachedAnswer | null {
  if (answer.status !== 200 || !Buffer.isBuffer(answer.body)) return null;
  try {
    if (!storable(JSON.parse(text))) return null;
  } catch {
    return null;
  }
  return { kind: 'json', contentType: answer.headers['content-type'] ?? 'application/json', body: answer.body };
}

/**
 * The bytes all streams being collected for the cache may hold at once on this instance: each
 * collection reserves what it keeps, and stops (its answer is then not stored) when the pool is
 * spent, so calls in flight cannot hold more than the cache's own bound besides the cache.
 */
export function createCapturePool(maxBytes: number) {
  let held = 0;
  return {
    reserve(bytes: number): boolean {
      if (held + bytes > maxBytes) return false;
      held += bytes;
      return true;
    },
    release(bytes: number): void {
      held = Math.max(0, held - bytes);
    },
    /** Bytes reserved now (tests). */
    held: () => held,
  };
}

export type CapturePool = ReturnType<typeof createCapturePool>;

/**
 * Collects a stream's events as they are relayed, reserving their bytes in `pool`. `finish(ok)`
 * gives the stream to store, or null when it did not end with its protocol's complete end
 * (`data: [DONE]`, `response.completed`), carried an error event, was not `ok` (broken, abandoned) or could not be held; either way it releases the bytes.
 */
export function streamCapture(pool: CapturePool) {
  let events: string[] = [];
  let usageEventIndex: number | null = null;
  let reserved = 0;
  let dropped = false;
  let done = false;
  const drop = () => {
    dropped = true;
    events = [];
    pool.release(reserved);
    reserved = 0;
  };
  return {
    onEvent(event: string, facts: EventFacts) {
      if (dropped) return;
      if (facts.error) return drop();
      const bytes = Buffer.byteLength(event) + (reserved === 0 ? ENTRY_OVERHEAD_BYTES : 0);
      if (!pool.reserve(bytes)) return drop();
      reserved += bytes;
      if (facts.usageOnly) usageEventIndex = events.length;
      if (facts.storable) done = true;
      events.push(event);
    },
    finish(ok: boolean, contentType: string): CachedAnswer | null {
      const entry: CachedAnswer | null =
        ok && done && !dropped ? { kind: 'stream', contentType, events, usageEventIndex } : null;
      pool.release(reserved);
      reserved = 0;
      dropped = true;
      return entry;
    },
  };
}
