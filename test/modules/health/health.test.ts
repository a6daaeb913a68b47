import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, POSTGRES_URL } from '../../helpers/databases.js';
import { createProxy } from '../../helpers/tcp-proxy.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function expectHealthy(basic: LightMyRequestResponse, deep: LightMyRequestResponse) {
  expect(basic.statusCode).toBe(200);
  expect(basic.json()).toEqual({ status: 'healthy', database: 'connected' });
  expect(deep.statusCode).toBe(200);
  const body = deep.json();
  expect(body).toEqual({
    status: expect.stringMatching(/^(healthy|degraded)$/),
    database: { status: 'connected', latency_ms: expect.any(Number) },
    timestamp: expect.stringMatching(ISO_MS),
  });
  expect(body.database.latency_ms).toBeGreaterThanOrEqual(0);
  // Over one second is degraded (still 200); the status must agree with the latency it reports.
  expect(body.status).toBe(body.database.latency_ms > 1000 ? 'degraded' : 'healthy');
}

function expectUnhealthy(basic: LightMyRequestResponse, deep: LightMyRequestResponse) {
  expect(basic.statusCode).toBe(503);
  expect(basic.json()).toEqual({ status: 'unhealthy', database: 'disconnected' });
  expect(deep.statusCode).toBe(503);
  expect(deep.json()).toEqual({
    status: 'unhealthy',
    database: { status: 'disconnected', latency_ms: expect.any(Number) },
    timestamp: expect.stringMatching(ISO_MS),
  });
}

/** Calls GET /health until it answers `status`, for at most ~10 s. */
async function pollHealth(t: TestApp, status: number): Promise<LightMyRequestResponse> {
  let last: LightMyRequestResponse | undefined;
  for (let i = 0; i < 200; i++) {
    last = await call(t.app, 'GET', '/health');
    if (last.statusCode === status) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`/health never answered ${status}; last: ${last?.statusCode} ${last?.body}`);
}

describe.each(DATABASES)('health on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('answers healthy and connected on /health and /health/deep, without credentials', async () => {
    expectHealthy(await call(t.app, 'GET', '/health'), await call(t.app, 'GET', '/health/deep'));
  });
});

describe.runIf(POSTGRES_URL)('health when PostgreSQL goes away and comes back', () => {
  let url: URL;
  let proxy: ReturnType<typeof createProxy>;
  let t: TestApp;

  beforeAll(async () => {
    // Built here, not in the describe body: that runs while the file is collected, also when skipped.
    url = new URL(POSTGRES_URL as string);
    proxy = createProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    t = await buildTestApp(
      { name: 'postgres', databaseUrl: viaProxy.toString() },
      { config: { databaseUrl: viaProxy.toString(), healthIntervalMs: 100 } },
    );
  });
  afterAll(async () => {
    await proxy.start().catch(() => undefined);
    await t.close();
    await proxy.stop();
  });

  it('reports unhealthy with 503 while the database is unreachable, then recovers without a restart', async () => {
    expectHealthy(await call(t.app, 'GET', '/health'), await call(t.app, 'GET', '/health/deep'));

    await proxy.stop();
    const down = await pollHealth(t, 503);
    expectUnhealthy(down, await call(t.app, 'GET', '/health/deep'));
    // A request that needs the database fails cleanly while it is away.
    const login = await call(t.app, 'POST', '/auth/login', {
      body: { email: 'x@example.test', password: 'whatever1' },
    });
    expect(login.statusCode).toBe(503);
    expect(login.json().error.code).toBe('SERVICE_UNAVAILABLE');

    await proxy.start();
    const up = await pollHealth(t, 200);
    expectHealthy(up, await call(t.app, 'GET', '/health/deep'));
  });
});
