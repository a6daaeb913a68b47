import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';

const ORIGIN = 'https://app.example.test';

describe.each(DATABASES)('CORS on $name', (database) => {
  let t: TestApp;
  let plain: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { corsOrigins: [ORIGIN, 'http://localhost:5173'] } });
    plain = await buildTestApp(database);
  });
  afterAll(async () => {
    await Promise.all([t.close(), plain.close()]);
  });

  it('answers a preflight for any path of an allowed origin, the headers asked for included', async () => {
    for (const url of ['/agent/list', '/auth/oauth/google/callback', '/no/such/route']) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, x-service-api-key',
        },
      });
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
      expect(String(res.headers['access-control-allow-headers'])).toBe(
        'authorization, content-type, x-service-api-key',
      );
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    }
  });

  it('marks answers to an allowed origin, errors included, and exposes the request id and rate-limit headers', async () => {
    for (const [url, status] of [
      ['/auth/oauth/providers', 200],
      ['/agent/list', 401],
      ['/no/such/route', 404],
    ] as const) {
      const res = await call(t.app, 'GET', url, { headers: { origin: ORIGIN } });
      expect(res.statusCode, url).toBe(status);
      expect(res.headers['access-control-allow-origin'], url).toBe(ORIGIN);
      expect(String(res.headers['access-control-expose-headers'])).toContain('X-Request-Id');
      expect(String(res.headers['access-control-expose-headers'])).toContain('X-RateLimit-Remaining');
    }
  });

  it('gives another origin nothing, and without configured origins nobody gets CORS headers', async () => {
    const other = await call(t.app, 'GET', '/auth/oauth/providers', {
      headers: { origin: 'https://evil.example.test' },
    });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const res = await call(plain.app, 'GET', '/auth/oauth/providers', { headers: { origin: ORIGIN } });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await plain.app.inject({
      method: 'OPTIONS',
      url: '/agent/list',
      headers: { origin: ORIGIN, 'access-control-request-method': 'GET' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });
});
