import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, type RateLimitStore } from '../../src/http/rate-limit-stores.js';

const EXACT_SCOPES = 100_000;
const WINDOW = 29_000_000;

/**
 * Hits `count` distinct scopes once each. Scopes that fit in the exact table must start at 1;
 * those beyond it (sketch) at 1 or more.
 */
async function fill(store: RateLimitStore, count: number, prefix = 'fill', exact = true) {
  for (let i = 0; i < count; i++) {
    const n = await store.hit(`${prefix}:${i}`, WINDOW);
    if (exact ? n !== 1 : n < 1) throw new Error(`scope ${prefix}:${i} started at ${n}`);
  }
}

describe('createMemoryStore', () => {
  it('counts each scope exactly, interleaved', async () => {
    const store = createMemoryStore();
    const truth = new Map<string, number>();
    for (let i = 0; i < 5_000; i++) {
      const scope = `user:${(i * 7919) % 37}`;
      const expected = (truth.get(scope) ?? 0) + 1;
      truth.set(scope, expected);
      expect(await store.hit(scope, WINDOW)).toBe(expected);
    }
  });

  it('is exact for every one of the first 100,000 scopes of a window', async () => {
    const store = createMemoryStore();
    await fill(store, EXACT_SCOPES);
    for (let i = 0; i < EXACT_SCOPES; i += 1) {
      const n = await store.hit(`fill:${i}`, WINDOW);
      if (n !== 2) expect.fail(`scope fill:${i} counted ${n}, expected 2`);
    }
    for (let round = 3; round <= 50; round++) expect(await store.hit('fill:99999', WINDOW)).toBe(round);
  });

  it('property: exact counts for any sequence of hits below the exact-scope bound', () => {
    return fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 2_000 }), async (ids) => {
        const store = createMemoryStore();
        const truth = new Map<number, number>();
        for (const id of ids) {
          const expected = (truth.get(id) ?? 0) + 1;
          truth.set(id, expected);
          expect(await store.hit(`s:${id}`, WINDOW)).toBe(expected);
        }
      }),
    );
  });

  describe('beyond 100,000 scopes (count-min sketch)', () => {
    it('property: the returned count is never below the true count, and rises with every hit', async () => {
      const store = createMemoryStore();
      await fill(store, EXACT_SCOPES);
      // Many sketch scopes first, so later ones collide with existing counters.
      await fill(store, 150_000, 'crowd', false);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 3_000 }),
          async (ids) => {
            // Fresh names per run: the true count of each is what this run sends.
            const run = randomUUID();
            const truth = new Map<number, number>();
            const last = new Map<number, number>();
            for (const id of ids) {
              const expected = (truth.get(id) ?? 0) + 1;
              truth.set(id, expected);
              const returned = await store.hit(`${run}:${id}`, WINDOW);
              expect(returned).toBeGreaterThanOrEqual(expected);
              // Each hit adds one to every counter of the scope: its count rises with every hit.
              expect(returned).toBeGreaterThanOrEqual((last.get(id) ?? 0) + 1);
              last.set(id, returned);
            }
          },
        ),
        { numRuns: 50 },
      );
    });

    it("never lowers an active scope's count when other scopes arrive", async () => {
      const store = createMemoryStore();
      const early = 'user:early';
      expect(await store.hit(early, WINDOW)).toBe(1);
      await fill(store, EXACT_SCOPES - 1);
      const late = 'user:late';
      let lateCount = await store.hit(late, WINDOW);
      for (let burst = 0; burst < 20; burst++) {
        await fill(store, 10_000, `burst-${burst}`, false);
        expect(await store.hit(early, WINDOW)).toBe(burst + 2);
        // Each hit adds one to every counter of the scope; others only ever add more.
        const now = await store.hit(late, WINDOW);
        expect(now).toBeGreaterThanOrEqual(lateCount + 1);
        lateCount = now;
      }
      // The sketch scope saw 21 hits: it may be over-counted, never under-counted.
      expect(lateCount).toBeGreaterThanOrEqual(21);
    });
  });

  it('starts a new window from zero, the sketch included', async () => {
    const store = createMemoryStore();
    for (let i = 1; i <= 5; i++) expect(await store.hit('user:a', WINDOW)).toBe(i);
    await fill(store, EXACT_SCOPES);
    for (let i = 0; i < 100; i++) await store.hit('user:sketched', WINDOW);
    expect(await store.hit('user:sketched', WINDOW)).toBeGreaterThanOrEqual(101);

    expect(await store.hit('user:a', WINDOW + 1)).toBe(1);
    expect(await store.hit('user:sketched', WINDOW + 1)).toBe(1);
    expect(await store.hit('fill:7', WINDOW + 1)).toBe(1);
    expect(await store.hit('user:a', WINDOW + 1)).toBe(2);
  });
});
