import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/modules/dashboard/dashboard-module.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { ensureDashboardBuilt } from './browser.js';

const SECURITY_HEADERS = ['content-security-policy', 'x-frame-options', 'referrer-policy'];

describe.each(DATABASES)('dashboard serving ($name)', (db) => {
  let t: TestApp;
  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await buildTestApp(db);
  }, 200_000);
  afterAll(() => t?.close());

  it('serves the app at /dashboard/ and for deep links, with the security headers', async () => {
    for (const url of [
      '/dashboard/',
      '/dashboard/agents/0194/tasks/0195',
      '/dashboard/keys?x=1',
      '/dashboard/invitations/Abc_-123',
    ]) {
      const res = await call(t.app, 'GET', url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('<div id="app"></div>');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['cache-control']).toBe('no-cache');
    }
    const bare = await call(t.app, 'GET', '/dashboard');
    expect(bare.statusCode).toBe(302);
    expect(bare.headers.location).toBe('/dashboard/');
  });

  it('serves the hashed assets with a long cache, and a missing asset is a 404, not the page', async () => {
    const html = (await call(t.app, 'GET', '/dashboard/')).body;
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await call(t.app, 'GET', script as string);
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
    expect(asset.headers['cache-control']).toContain('immutable');
    for (const name of SECURITY_HEADERS) expect(asset.headers[name]).toBeDefined();
    const missing = await call(t.app, 'GET', '/dashboard/assets/nope.js');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('NOT_FOUND');
  });

  it('has no inline script or style in its page (the CSP would refuse them)', async () => {
    const html = (await call(t.app, 'GET', '/dashboard/')).body;
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  it('leaves the API alone: API routes carry no dashboard headers and the dashboard is not in the OpenAPI document', async () => {
    const health = await call(t.app, 'GET', '/health');
    for (const name of SECURITY_HEADERS) expect(health.headers[name]).toBeUndefined();
    const doc = (await call(t.app, 'GET', '/openapi.json')).json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/dashboard'))).toEqual([]);
  });
});

describe.each(DATABASES)('dashboard turned off ($name)', (db) => {
  it('answers 404 everywhere below /dashboard when TASKHOOK_DASHBOARD=false', async () => {
    const t = await buildTestApp(db, { config: { dashboard: false } });
    try {
      for (const url of ['/dashboard', '/dashboard/', '/dashboard/agents']) {
        const res = await call(t.app, 'GET', url);
        expect(res.statusCode, url).toBe(404);
        expect(res.json().error.code).toBe('NOT_FOUND');
      }
    } finally {
      await t.close();
    }
  });
});

describe('dashboard bundle', () => {
  it('stays under 300 KB gzipped and loads nothing from another origin', () => {
    ensureDashboardBuilt();
    const dir = path.join(DASHBOARD_DIR, 'assets');
    let total = 0;
    for (const file of readdirSync(dir)) {
      const body = readFileSync(path.join(dir, file));
      total += gzipSync(body).length;
      if (file.endsWith('.js') || file.endsWith('.css')) {
        // No CDN: nothing in the bundle fetches from an absolute http(s) URL.
        expect(body.toString('utf8'), file).not.toMatch(/(?:src|href|url\()\s*=?\s*["']?https?:\/\//);
      }
    }
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThan(300 * 1024);
  });
});
