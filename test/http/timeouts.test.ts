import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { DATABASES, type TestDatabase } from '../helpers/databases.js';

/** Writes `data`, then collects what the server sends until it closes the socket (or 10 s pass). */
function sendAndWaitForClose(port: number, data: string): Promise<{ received: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve({ received, closed: false });
    }, 10_000);
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ received, closed: true });
    });
    socket.on('error', () => undefined);
    socket.write(data);
  });
}

describe('slow clients are disconnected', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await buildTestApp(DATABASES[0] as TestDatabase, { config: { headersTimeoutMs: 300, requestTimeoutMs: 800 } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  afterAll(() => t.close());

  it('a client that never finishes its headers gets 408 and is closed', async () => {
    const { received, closed } = await sendAndWaitForClose(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\n');
    expect(closed).toBe(true);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a client that never finishes its body gets 408 and is closed', async () => {
    const head =
      'POST /auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
    const { received, closed } = await sendAndWaitForClose(port, `${head}{"email":`);
    expect(closed).toBe(true);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a client that sends its request in time is answered as usual', async () => {
    const { received } = await sendAndWaitForClose(
      port,
      'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    expect(received).toMatch(/^HTTP\/1\.1 200/);
  });
});
