import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePlatformKey } from '../../src/modules/accounts/accounts-fns.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import {
  A2A_REST_ROUTES,
  bearer,
  createRouteContext,
  expectErrorEnvelope,
  expectFlatError,
  expectFreshRequestId,
  expectStandardHeaders,
  INGEST_ROUTES,
  keyHeaders,
  MCP_OAUTH_ROUTES,
  MCP_ROUTES,
  probeUrl,
  ROUTES,
  registeredRoutes,
  routeKey,
  sendRoute,
  WORKSPACE_ROUTES,
} from '../helpers/routes.js';

const MISSING = 'Authorization header is required';
const INVALID = 'Invalid or expired token';
const SESSION_REQUIRED = 'This endpoint requires a user session';
const AGENTS_DISABLED = 'The AI agents feature is not enabled for this account';

/** A syntactically valid key whose checksum is wrong: refused without a lookup. */
function breakChecksum(key: string): string {
  const last = key.at(-1) === 'A' ? 'B' : 'A';
  return key.slice(0, -1) + last;
}

describe.each(DATABASES)('authentication matrix on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  describe('route catalogue', () => {
    it('names each route once, with one id per path parameter', () => {
      const keys = ROUTES.map(routeKey);
      expect(new Set(keys).size).toBe(keys.length);
      for (const route of ROUTES) {
        const params = route.path.match(/:[A-Za-z]+/g) ?? [];
        expect({ route: routeKey(route), ids: route.ids?.length ?? 0 }).toEqual({
          route: routeKey(route),
          ids: params.length,
        });
        // docs/api.md §3.6: the agents feature covers /agent/* and /v1/agent/*, and agents served over A2A.
        expect(route.feature === 'agents').toBe(/^\/((v1\/)?agent|a2a)(\/|$)/.test(route.path));
      }
    });

    it('lists exactly the registered routes that answer 401 without a credential', async () => {
      const registered = registeredRoutes(t.app).map(routeKey);
      // The OpenAPI document lists open and authenticated routes alike.
      expect(registered).toEqual(expect.arrayContaining(['GET /health', 'POST /auth/login', ...ROUTES.map(routeKey)]));
      const authenticated: string[] = [];
      for (const route of registeredRoutes(t.app)) {
        const res = await call(t.app, route.method as 'GET', probeUrl(route.path));
        if (res.statusCode === 401 && res.json().error === MISSING) authenticated.push(routeKey(route));
      }
      expect(authenticated.sort()).toEqual(
        [...ROUTES, ...INGEST_ROUTES, ...WORKSPACE_ROUTES, ...MCP_ROUTES, ...A2A_REST_ROUTES, ...MCP_OAUTH_ROUTES]
          .map(routeKey)
          .sort(),
      );
    });
  });

  describe.each(ROUTES)('$method $path', (route) => {
    it('answers 401 "Authorization header is required" without a credential', async () => {
      const user = await createUser(t);
      const { ctx } = await createRouteContext(t, user);
      const empty: Array<Record<string, string>> = [{}, { authorization: '' }, { authorization: '   ' }];
      for (const headers of empty) {
        expectFlatError(await sendRoute(t, route, ctx, headers), 401, MISSING);
      }
    });

    it('answers 401 "Invalid or expired token" for garbage, malformed keys and ingest tokens', async () => {
      const user = await createUser(t);
      const { ctx, secrets } = await createRouteContext(t, user);
      const refused: Array<Record<string, string>> = [
        bearer('garbage'),
        bearer('a.b.c'),
        bearer(`${user.token}x`),
        { authorization: 'Basic dXNlcjpwYXNzd29yZA==' },
        ...keyHeaders(breakChecksum(user.key)),
        ...keyHeaders(generatePlatformKey()),
        ...keyHeaders('sk_service_short'),
        { authorization: secrets.ingestToken },
        { authorization: secrets.ingestToken.toUpperCase() },
        bearer(secrets.ingestToken),
      ];
      for (const headers of refused) {
        const res = await sendRoute(t, route, ctx, headers);
        expect({ headers, status: res.statusCode }).toEqual({ headers, status: 401 });
        expectFlatError(res, 401, INVALID);
      }
    });

    it(`treats platform keys per the route's mode (${route.auth}) and accepts a JWT`, async () => {
      const user = await createUser(t);
      for (const headers of keyHeaders(user.key)) {
        const { ctx } = await createRouteContext(t, user);
        const res = await sendRoute(t, route, ctx, headers);
        if (route.auth === 'session') {
          expectFlatError(res, 403, SESSION_REQUIRED);
        } else {
          expect({ headers, status: res.statusCode, body: res.body }).toMatchObject({ status: route.status });
          expectStandardHeaders(res);
        }
      }
      const { ctx } = await createRouteContext(t, user);
      const res = await sendRoute(t, route, ctx, bearer(user.token));
      expect({ status: res.statusCode, body: res.body }).toMatchObject({ status: route.status });
      expectStandardHeaders(res);
    });

    if (route.feature === 'agents') {
      it('answers 403 to an account without the agents feature, before any ownership check', async () => {
        const owner = await createUser(t);
        const foreignAgent = (await createAgent(t, owner)).uuid;
        const disabled = await createUser(t, { agentsEnabled: false });
        for (const agent of [foreignAgent, randomUUID()]) {
          const { ctx } = await createRouteContext(t, disabled, { agent });
          const credentials = [bearer(disabled.token), ...keyHeaders(disabled.key)];
          for (const headers of credentials)
            expectFlatError(await sendRoute(t, route, ctx, headers), 403, AGENTS_DISABLED);
        }
        const stillThere = await call(t.app, 'GET', `/agent/${foreignAgent}`, { token: owner.token });
        expect(stillThere.statusCode).toBe(200);
      });
    } else {
      it('serves an account without the agents feature', async () => {
        const disabled = await createUser(t, { agentsEnabled: false });
        const other = await createUser(t);
        const { ctx } = await createRouteContext(t, disabled, { agent: (await createAgent(t, other)).uuid });
        const res = await sendRoute(t, route, ctx, bearer(disabled.token));
        // A route outside the feature that names an agent or a task (a model budget) is served, and
        // finds neither: the context's agent is another user's, its tasks placeholders.
        const namesOthers = route.ids?.some((id) => id === 'agent' || id === 'task');
        expect({ status: res.statusCode, body: res.body }).toMatchObject({ status: namesOthers ? 404 : route.status });
      });
    }
  });

  describe('request ids and standard headers', () => {
    it('puts X-Request-Id and X-RateLimit-* on unknown-route 404s, with and without a credential', async () => {
      const user = await createUser(t);
      for (const [method, url] of [
        ['GET', '/no/such/route'],
        ['POST', '/agent/list/extra'],
        ['PUT', '/agent/list'],
      ] as const) {
        expectErrorEnvelope(await call(t.app, method, url), 404, 'NOT_FOUND');
        expectErrorEnvelope(await call(t.app, method, url, { token: user.token }), 404, 'NOT_FOUND');
      }
    });

    it('echoes a valid incoming X-Request-Id in the header and in meta.request_id', async () => {
      const user = await createUser(t);
      for (const id of [`trace-${randomUUID()}`, 'a.b_c:d-E9', 'x'.repeat(127) + randomUUID().slice(0, 1)]) {
        const res = await call(t.app, 'GET', '/no/such/route', { headers: { 'x-request-id': id } });
        expect(res.headers['x-request-id']).toBe(id);
        expect(expectErrorEnvelope(res, 404, 'NOT_FOUND').meta).toMatchObject({ request_id: id });
        const unauthenticated = await call(t.app, 'GET', '/agent/list', { headers: { 'x-request-id': id } });
        expect(unauthenticated.statusCode).toBe(401);
        expect(unauthenticated.headers['x-request-id']).toBe(id);
        const bad = await call(t.app, 'GET', '/agent/list?limit=0', {
          token: user.token,
          headers: { 'x-request-id': id },
        });
        expect(expectErrorEnvelope(bad, 400, 'INVALID_REQUEST').meta).toMatchObject({ request_id: id });
      }
    });

    it('replaces an invalid X-Request-Id with a fresh UUID', async () => {
      for (const id of ['has space', 'a'.repeat(200), 'a'.repeat(129), 'slash/inside', 'semi;colon', 'ünïcode']) {
        const res = await call(t.app, 'GET', '/no/such/route', { headers: { 'x-request-id': id } });
        expectFreshRequestId(res, id);
        expect(expectErrorEnvelope(res, 404, 'NOT_FOUND').meta).toMatchObject({
          request_id: res.headers['x-request-id'],
        });
      }
      const first = await call(t.app, 'GET', '/no/such/route');
      const second = await call(t.app, 'GET', '/no/such/route');
      expectFreshRequestId(first, '');
      expectFreshRequestId(second, String(first.headers['x-request-id']));
    });
  });
});
