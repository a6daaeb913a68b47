import { describe, expect, it } from 'vitest';
import { createTurnBatcher, type TurnBatch } from '../../src/lib/turn-batcher.js';

interface Item {
  n: number;
}

/** A batcher whose writes are recorded; `together` leaves out the items `leave` picks, or fails. */
function recorded(opts: { max?: number; leave?: (item: Item) => boolean; fail?: boolean; badAlone?: number } = {}) {
  const batches: number[][] = [];
  const alone: number[] = [];
  const how: TurnBatch<Item, string> = {
    max: opts.max ?? 100,
    together: async (batch) => {
      batches.push(batch.map((i) => i.n));
      if (opts.fail) throw new Error('batch failed');
      return { answer: 'together', left: batch.filter((i) => opts.leave?.(i)) };
    },
    alone: async (item) => {
      alone.push(item.n);
      if (item.n === opts.badAlone) throw new Error(`bad ${item.n}`);
      return `alone ${item.n}`;
    },
  };
  return { write: createTurnBatcher(how), batches, alone };
}

const items = (count: number) => Array.from({ length: count }, (_, n) => ({ n }));

describe('createTurnBatcher', () => {
  it('writes the items of one turn in one batch and answers each', async () => {
    const b = recorded();
    const answers = await Promise.all(items(5).map((i) => b.write(i)));
    expect(answers).toEqual(Array(5).fill('together'));
    expect(b.batches).toEqual([[0, 1, 2, 3, 4]]);
    expect(b.alone).toEqual([]);
  });

  it('a lone item takes its own path, and a later turn makes a batch of its own', async () => {
    const b = recorded();
    expect(await b.write({ n: 7 })).toBe('alone 7');
    await Promise.all(items(2).map((i) => b.write(i)));
    expect(b.batches).toEqual([[0, 1]]);
    expect(b.alone).toEqual([7]);
  });

  it('cuts a busy turn into batches of at most max', async () => {
    const b = recorded({ max: 4 });
    await Promise.all(items(10).map((i) => b.write(i)));
    expect(b.batches).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
    // A cut leaving one item sends it alone.
    const c = recorded({ max: 4 });
    await Promise.all(items(9).map((i) => c.write(i)));
    expect(c.batches).toHaveLength(2);
    expect(c.alone).toEqual([8]);
  });

  it('the items left out go alone, each with its own answer; the same values queued twice are two items', async () => {
    const b = recorded({ leave: (i) => i.n % 2 === 1 });
    const queued = [...items(4), { n: 1 }];
    const answers = await Promise.all(queued.map((i) => b.write(i)));
    expect(answers).toEqual(['together', 'alone 1', 'together', 'alone 3', 'alone 1']);
    expect(b.alone.sort()).toEqual([1, 1, 3]);
  });

  it('a failed batch sends every item alone: one bad item fails only its own caller', async () => {
    const b = recorded({ fail: true, badAlone: 2 });
    const outcomes = await Promise.allSettled(items(4).map((i) => b.write(i)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(outcomes[2]).toMatchObject({ reason: new Error('bad 2') });
    expect(b.alone.sort()).toEqual([0, 1, 2, 3]);
  });
});
