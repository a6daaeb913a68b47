import { describe, expect, it } from 'vitest';
import { createSemaphore } from '../../src/lib/semaphore.js';

describe('semaphore', () => {
  it('grants at most `limit` slots at once and hands freed slots to the oldest waiter', async () => {
    const s = createSemaphore(2);
    expect(await s.acquire(0)).toBe(true);
    expect(await s.acquire(0)).toBe(true);
    expect(s.active).toBe(2);
    expect(await s.acquire(0)).toBe(false);
    const order: string[] = [];
    const first = s.acquire(60_000).then((ok) => order.push(`first:${ok}`));
    const second = s.acquire(60_000).then((ok) => order.push(`second:${ok}`));
    expect(s.waiting).toBe(2);
    s.release();
    await first;
    expect(order).toEqual(['first:true']);
    expect(s.active).toBe(2);
    s.release();
    await second;
    expect(order).toEqual(['first:true', 'second:true']);
    s.release();
    s.release();
    expect(s.active).toBe(0);
    expect(await s.acquire(0)).toBe(true);
  });

  it('gives a waiter up after its wait, and a later release does not reach it', async () => {
    const s = createSemaphore(1);
    expect(await s.acquire(0)).toBe(true);
    expect(await s.acquire(5)).toBe(false);
    expect(s.waiting).toBe(0);
    s.release();
    expect(s.active).toBe(0);
  });
});
