import { describe, expect, it } from 'vitest';
import { createAccountLanes } from '../../src/lib/account-lanes.js';

/** A piece of work that ends when the test says so. */
function held() {
  let finish!: (value: string) => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { promise, finish, fail };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('per-account lanes', () => {
  it('run up to perAccount pieces of an account at once; the rest wait in order and take freed slots', async () => {
    const lanes = createAccountLanes(2);
    const works = Array.from({ length: 5 }, () => held());
    const started: number[] = [];
    const runs = works.map((w, i) =>
      lanes.run('a', () => {
        started.push(i);
        return w.promise;
      }),
    );
    await turn();
    expect(started).toEqual([0, 1]);
    expect(lanes.stats()).toEqual({ inProgress: 2, waiting: 3, waitedTotal: 3 });

    works[1]?.finish('one');
    await turn();
    expect(started).toEqual([0, 1, 2]);
    works[0]?.finish('zero');
    await turn();
    expect(started).toEqual([0, 1, 2, 3]);
    expect(lanes.stats()).toEqual({ inProgress: 2, waiting: 1, waitedTotal: 3 });

    for (const w of works) w.finish('done');
    expect(await Promise.all(runs)).toEqual(['zero', 'one', 'done', 'done', 'done']);
    expect(lanes.stats()).toEqual({ inProgress: 0, waiting: 0, waitedTotal: 3 });
  });

  it('never make another account wait for a full lane', async () => {
    const lanes = createAccountLanes(1);
    const busy = held();
    const hostile = [lanes.run('hostile', () => busy.promise), lanes.run('hostile', async () => 'later')];
    await turn();
    expect(await lanes.run('quiet', async () => 'at once')).toBe('at once');
    expect(lanes.stats().waiting).toBe(1);
    busy.finish('first');
    expect(await Promise.all(hostile)).toEqual(['first', 'later']);
  });

  it('free the slot when the work fails, and pass the failure on', async () => {
    const lanes = createAccountLanes(1);
    const failing = held();
    const first = lanes.run('a', () => failing.promise);
    const second = lanes.run('a', async () => 'ran');
    failing.fail(new Error('refused'));
    await expect(first).rejects.toThrow('refused');
    expect(await second).toBe('ran');
    expect(lanes.stats()).toEqual({ inProgress: 0, waiting: 0, waitedTotal: 1 });
  });

  it('free the slot when the work throws before it returns a promise', async () => {
    const lanes = createAccountLanes(1);
    await expect(
      lanes.run('a', () => {
        throw new Error('at once');
      }),
    ).rejects.toThrow('at once');
    expect(await lanes.run('a', async () => 'next')).toBe('next');
    expect(lanes.stats().inProgress).toBe(0);
  });
});
