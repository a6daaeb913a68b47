import { describe, expect, it } from 'vitest';
import { createCapturePool, streamCapture } from '../../../src/modules/spotlight/cache/cache-answers.js';
import { createResponseCache, ENTRY_OVERHEAD_BYTES } from '../../../src/modules/spotlight/cache/cache-store.js';
import { chatProtocol } from '../../../src/modules/spotlight/proxy/protocols/chat-protocol.js';

const meta = { credentialUuid: 'c', upstreamModel: 'gpt-4o', responseModel: 'gpt-4o-2024' };
const json = (text: string) => ({ kind: 'json', contentType: 'application/json', body: Buffer.from(text) }) as const;

function setup(maxBytes: number) {
  let now = 1_000_000;
  const cache = createResponseCache({ maxBytes, now: () => now });
  return { cache, advance: (ms: number) => (now += ms) };
}

describe('response cache', () => {
  it('a stored answer is a hit within the policy and the TTL, byte for byte, with its age', () => {
    const { cache, advance } = setup(1_000_000);
    expect(cache.store('k', json('{"choices":[]}'), meta, 60)).toBe(true);
    advance(2_500);
    const hit = cache.lookup('k', 60);
    expect(hit?.answer).toEqual(json('{"choices":[]}'));
    expect(hit?.meta).toEqual(meta);
    expect(hit && cache.ageSeconds(hit)).toBe(2);
  });

  it('a policy shorter than the entry age misses, the entry stays for longer policies', () => {
    const { cache, advance } = setup(1_000_000);
    cache.store('k', json('{}'), meta, 600);
    advance(10_000);
    expect(cache.lookup('k', 10)).toBeNull();
    expect(cache.lookup('k', 11)).not.toBeNull();
  });

  it('an expired entry misses and is dropped', () => {
    const { cache, advance } = setup(1_000_000);
    cache.store('k', json('{}'), meta, 5);
    advance(5_000);
    expect(cache.lookup('k', 86_400)).toBeNull();
    expect(cache.stats()).toEqual({ entries: 0, bytes: 0 });
  });

  it('evicts the least recently used entries first when storing beyond the bound', () => {
    const size = ENTRY_OVERHEAD_BYTES + 100;
    const { cache } = setup(size * 2);
    const body = json('x'.repeat(100));
    cache.store('a', body, meta, 60);
    cache.store('b', body, meta, 60);
    expect(cache.lookup('a', 60)).not.toBeNull(); // a is now the most recently used
    cache.store('c', body, meta, 60);
    expect(cache.lookup('b', 60)).toBeNull();
    expect(cache.lookup('a', 60)).not.toBeNull();
    expect(cache.lookup('c', 60)).not.toBeNull();
    expect(cache.stats()).toEqual({ entries: 2, bytes: size * 2 });
  });

  it('an answer larger than the bound is not stored and evicts nothing', () => {
    const { cache } = setup(ENTRY_OVERHEAD_BYTES + 10);
    cache.store('a', json('y'), meta, 60);
    expect(cache.store('b', json('x'.repeat(11)), meta, 60)).toBe(false);
    expect(cache.lookup('a', 60)).not.toBeNull();
    expect(cache.lookup('b', 60)).toBeNull();
  });

  it('a bound of 0 turns the cache off', () => {
    const { cache } = setup(0);
    expect(cache.store('a', json('{}'), meta, 60)).toBe(false);
    expect(cache.lookup('a', 60)).toBeNull();
  });

  it('counts stream events by their bytes and replaces an entry stored again under its key', () => {
    const { cache } = setup(1_000_000);
    const events = ['data: {"choices":[]}\n\n', 'data: [DONE]\n\n'];
    cache.store('s', { kind: 'stream', contentType: 'text/event-stream', events, usageEventIndex: null }, meta, 60);
    cache.store('s', { kind: 'stream', contentType: 'text/event-stream', events, usageEventIndex: null }, meta, 60);
    expect(cache.stats()).toEqual({ entries: 1, bytes: ENTRY_OVERHEAD_BYTES + events.join('').length });
  });
});

describe('collecting streams for the cache', () => {
  const done = 'data: [DONE]';
  // What the chat protocol's reader says of each event (its error chunks, its [DONE]).
  const facts = (event: string) => chatProtocol.streamReader().read(event);
  it('keeps every collection in flight within one pool, and gives back its bytes however it ends', () => {
    const pool = createCapturePool(ENTRY_OVERHEAD_BYTES * 2 + 40);
    const a = streamCapture(pool);
    const b = streamCapture(pool);
    a.onEvent('data: {"x":1}', facts('data: {"x":1}'));
    expect(pool.held()).toBe(ENTRY_OVERHEAD_BYTES + 13);
    b.onEvent(`data: ${'y'.repeat(60)}`, facts(`data: ${'y'.repeat(60)}`));
    // b could not be held: it stops collecting and its answer is not stored; a goes on.
    expect(b.finish(true, 'text/event-stream')).toBeNull();
    a.onEvent(done, facts(done));
    expect(a.finish(true, 'text/event-stream')).toMatchObject({ kind: 'stream', events: ['data: {"x":1}', done] });
    expect(pool.held()).toBe(0);
  });

  it('stores nothing of a stream that carried an error event, did not end with [DONE], or was not ok', () => {
    const pool = createCapturePool(1 << 20);
    const inband = streamCapture(pool);
    inband.onEvent('data: {"choices":[]}', facts('data: {"choices":[]}'));
    inband.onEvent('data: {"error":{"message":"overloaded"}}', facts('data: {"error":{"message":"overloaded"}}'));
    inband.onEvent(done, facts(done));
    expect(inband.finish(true, 'text/event-stream')).toBeNull();
    const cut = streamCapture(pool);
    cut.onEvent('data: {"choices":[]}', facts('data: {"choices":[]}'));
    expect(cut.finish(true, 'text/event-stream')).toBeNull();
    const left = streamCapture(pool);
    left.onEvent(done, facts(done));
    expect(left.finish(false, 'text/event-stream')).toBeNull();
    expect(pool.held()).toBe(0);
  });
});
