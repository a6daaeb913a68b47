import { lookup, promises } from 'node:dns';
import net from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createOutboundDispatcher } from '../../src/lib/outbound.js';
import { startReceiver } from '../helpers/callbacks.js';
import { isLoopback, takeRefusals } from '../helpers/loopback-guard.js';

/*
 * The guard every test file runs under (vitest setupFiles): nothing leaves loopback. Made-up
 * public addresses (documentation and example ranges) are used; none is ever contacted.
 */
describe('the test network guard', () => {
  it('tells loopback addresses from the rest', () => {
    for (const address of ['127.0.0.1', '127.3.2.1', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopback(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '10.0.0.1', '::ffff:8.8.8.8', '2001:db8::1', 'example.com']) {
      expect(isLoopback(address), address).toBe(false);
    }
  });

  it('refuses a connection to a public address before it is attempted', async () => {
    const socket = net.connect({ host: '93.184.216.34', port: 80 });
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve));
    expect(err.code).toBe('ETESTNETWORK');
    expect(takeRefusals()).toEqual(['a connection to 93.184.216.34']);
  });

  it('answers no system lookup but localhost', async () => {
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('example.com', (e) => resolve(e)));
    expect(err?.code).toBe('ETESTNETWORK');
    expect(takeRefusals()).toEqual(['a DNS lookup of example.com']);
    await expect(promises.lookup('example.com')).rejects.toMatchObject({ code: 'ETESTNETWORK' });
    expect(takeRefusals()).toEqual(['a DNS lookup of example.com']);
  });

  it("checks what a test's own resolver answers: a public answer is refused, 127.0.0.1 connects", async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      const publicAnswer = createOutboundDispatcher({
        allowPrivate: true,
        lookup: async () => [{ address: '93.184.216.34', family: 4 }],
        timeoutMs: 5000,
      });
      await expect(request(`http://hooks.example.com:${port}/hook`, { dispatcher: publicAnswer })).rejects.toThrow();
      expect(takeRefusals()).toEqual(['a connection to 93.184.216.34 (hooks.example.com)']);

      const mapped = createOutboundDispatcher({
        allowPrivate: true,
        lookup: async () => [{ address: '127.0.0.1', family: 4 }],
        timeoutMs: 5000,
      });
      const res = await request(`http://hooks.example.com:${port}/hook`, { method: 'POST', dispatcher: mapped });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      await receiver.close();
    }
  });
});
