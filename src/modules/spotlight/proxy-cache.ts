import { Readable } from 'node:stream';
import { type CachedAnswer, type CacheEntry, ENTRY_OVERHEAD_BYTES } from './response-cache.js';
import { sseData } from './spotlight-fns.js';
import type { ProxyAnswer } from './spotlight-proxy.js';

/**
 * The response cache at the proxy's edge: what a hit answers, and which answers of a miss are
 * kept. The store itself (bounds, LRU, expiry) is response-cache.ts; the key is cache-key-fns.ts.
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

/** A non-streamed answer worth keeping: a 200 whose body is a JSON chat completion with `choices`. */
export function wholeEntry(answer: ProxyAnswer, text: string): CachedAnswer | null {
  if (answer.status !== 200 || !Buffer.isBuffer(answer.body)) return null;
  try {
    const parsed = JSON.parse(text) as { choices?: unknown };
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray(parsed.choices)) return null;
  } catch {
    return null;
  }
  return { kind: 'json', contentType: answer.headers['content-type'] ?? 'application/json', body: answer.body };
}

/**
 * Collects a stream's events as they are relayed, up to `maxBytes` (the cache's whole bound: a
 * larger answer could never be stored, so collecting stops there). `entry()` is the stream to
 * store, or null when it did not end with `data: [DONE]` or grew too large.
 */
export function streamCapture(maxBytes: number) {
  const events: string[] = [];
  let usageEventIndex: number | null = null;
  let bytes = ENTRY_OVERHEAD_BYTES;
  let overflow = maxBytes <= 0;
  let done = false;
  return {
    onEvent(event: string, usageOnly: boolean) {
      if (overflow) return;
      bytes += Buffer.byteLength(event);
      if (bytes > maxBytes) {
        overflow = true;
        events.length = 0;
        return;
      }
      if (usageOnly) usageEventIndex = events.length;
      if (sseData(event) === '[DONE]') done = true;
      events.push(event);
    },
    entry(contentType: string): CachedAnswer | null {
      if (overflow || !done) return null;
      return { kind: 'stream', contentType, events: [...events], usageEventIndex };
    },
  };
}
