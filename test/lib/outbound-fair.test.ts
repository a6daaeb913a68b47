import { setMaxListeners } from 'node:events';
import { Agent, fetch, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFairOutbound, type FairOutbound } from '../../src/lib/outbound-fair.js';
import { eventually, type Receiver, startReceiver } from '../helpers/callbacks.js';

/*
 * The per-account lanes in front of a shared undici pool. The receiver on 127.0.0.1 never answers
 * `/hang`, so a request there holds its socket until its caller gives up; `/ok` answers 200. Pools
 * here have one or a few sockets so that filling one takes a handful of requests: the rules are
 * the same at the production size of 64.
 */

let receiver: Receiver;
const url = (path: string) => receiver.url.replace('/hook', path);
const hanging = () => receiver.requests.filter((r) => r.path === '/hang').length;

beforeAll(async () => {
  receiver = await startReceiver((r) => (r.path === '/hang' ? null : { status: 200, body: 'ok' }));
});
afterAll(() => receiver.close());

/** Aborts the callers still waiting and waits for the pool to hand every slot back. */
async function drain(pool: FairOutbound, callers: AbortController) {
  callers.abort(new Error('test over'));
  await eventually(() => {
    const { inFlight, queued } = pool.stats();
    return inFlight === 0 && queued === 0 ? true : undefined;
  }, 'the pool to be empty');
  await pool.close();
}

describe('fair outbound pool', () => {
  it("answers a request's deadline even while it waits in undici's queue for a socket", async () => {
    // One socket, and an account cap above it: the second request waits inside undici, where
    // undici alone would keep it until the first one's socket frees (never, here).
    const pool = createFairOutbound({ dispatcher: new Agent({ connections: 1 }), perAccount: 4 });
    const callers = new AbortController();
    const first = request(url('/hang'), { method: 'POST', dispatcher: pool.forAccount('a'), signal: callers.signal });
    first.catch(() => undefined);
    await eventually(() => (hanging() >= 1 ? true : undefined), 'the first request to arrive');

    const deadline = AbortSignal.any([AbortSignal.timeout(50), callers.signal]);
    const second = request(url('/ok'), { dispatcher: pool.forAccount('a'), signal: deadline });
    await expect(second).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(pool.stats()).toEqual({ inFlight: 2, queued: 0 });

    await drain(pool, callers);
    // The dropped request, handed a socket once the first one ended, never reached the receiver.
    expect(receiver.requests.filter((r) => r.path === '/ok')).toHaveLength(0);
  });

  it("lets another account through while one account's requests hang, holding only its cap", async () => {
    const before = hanging();
    const pool = createFairOutbound({ dispatcher: new Agent({ connections: 3 }), perAccount: 2 });
    const callers = new AbortController();
    setMaxListeners(20, callers.signal);
    for (let i = 0; i < 6; i++) {
      const hung = request(url('/hang'), { method: 'POST', dispatcher: pool.forAccount('a'), signal: callers.signal });
      hung.catch(() => undefined);
    }
    await eventually(() => (hanging() - before >= 2 ? true : undefined), "account a's first requests");
    expect(pool.stats()).toEqual({ inFlight: 2, queued: 4 });

    const res = await request(url('/ok'), { dispatcher: pool.forAccount('b'), signal: AbortSignal.timeout(10_000) });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    // fetch (the a2a runtime's way) goes through the same lanes.
    const fetched = await fetch(url('/ok'), { dispatcher: pool.forAccount('b') });
    expect(await fetched.text()).toBe('ok');

    expect(hanging() - before).toBe(2);
    await drain(pool, callers);
  });

  it("takes a request out of its account's queue when its deadline fires there", async () => {
    const pool = createFairOutbound({ dispatcher: new Agent({ connections: 8 }), perAccount: 1 });
    const callers = new AbortController();
    const first = request(url('/hang'), { method: 'POST', dispatcher: pool.forAccount('a'), signal: callers.signal });
    first.catch(() => undefined);
    const waiting = request(url('/ok'), { dispatcher: pool.forAccount('a'), signal: AbortSignal.timeout(50) });
    await expect(waiting).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(pool.stats()).toEqual({ inFlight: 1, queued: 0 });
    await drain(pool, callers);
  });
});
