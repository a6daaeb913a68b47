import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';
import {
  bearer,
  type ContextSecrets,
  createRouteContext,
  expectErrorEnvelope,
  freshId,
  type IdKind,
  keyHeaders,
  ROUTES,
  routeKey,
  sendRoute,
  withoutVolatileMeta,
} from '../helpers/routes.js';

type Snapshot = (t: TestApp, owner: TestUser, id: string, secrets: ContextSecrets) => Promise<unknown>;

/** What another user can observe of a resource of each kind, to show an attempt left it unchanged. */
const SNAPSHOTS: Record<IdKind, Snapshot> = {
  agent: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/agent/${id}`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  platformKey: async (t, owner, id, secrets) => {
    const list = await call(t.app, 'GET', '/auth/platform_keys', { token: owner.token });
    const { last_used_at: _used, ...entry } = list.json().keys.find((k: { uuid: string }) => k.uuid === id);
    const use = await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': secrets.platformKey } });
    return { entry, keyStillWorks: use.statusCode };
  },
  ingestToken: async (t, owner, id) => {
    const list = await call(t.app, 'GET', '/auth/ingest_tokens', { token: owner.token });
    return list.json().tokens.find((k: { uuid: string }) => k.uuid === id);
  },
  task: (t, owner, id) => taskSnapshot(t, owner, id),
  runningTask: (t, owner, id) => taskSnapshot(t, owner, id),
  doneTask: (t, owner, id) => taskSnapshot(t, owner, id),
  delivery: async () => null,
  trace: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${id}`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  providerCredential: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/user/provider_credentials/${id}`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  modelCall: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  modelRoute: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/spotlight/routes/${id}`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  workspace: async (t, owner, id) => {
    const res = await call(t.app, 'GET', `/workspaces/${id}/audit_log?limit=100`, { token: owner.token });
    return { status: res.statusCode, body: res.json() };
  },
  schedule: async (t, owner, id) => {
    const agents = (await call(t.app, 'GET', '/agent/list?limit=100', { token: owner.token })).json().agents;
    for (const agent of agents as Array<{ uuid: string }>) {
      const res = await call(t.app, 'GET', `/v1/agent/${agent.uuid}/schedules/${id}`, { token: owner.token });
      if (res.statusCode !== 200) continue;
      const runs = await call(t.app, 'GET', `/v1/agent/${agent.uuid}/schedules/${id}/runs`, { token: owner.token });
      return { schedule: res.json(), runs: runs.json() };
    }
    return null;
  },
  trigger: async (t, owner, id, secrets) => {
    const agents = (await call(t.app, 'GET', '/agent/list?limit=100', { token: owner.token })).json().agents;
    for (const agent of agents as Array<{ uuid: string }>) {
      const res = await call(t.app, 'GET', `/v1/agent/${agent.uuid}/triggers/${id}`, { token: owner.token });
      if (res.statusCode !== 200) continue;
      // Authentication comes before the content type: 415 shows the secret still opens the address, creating nothing.
      const probe = await call(t.app, 'POST', `/v1/webhooks/triggers/${id}`, {
        headers: { 'x-webhook-secret': secrets.trigger, 'content-type': 'text/plain' },
        body: 'probe',
      });
      return { trigger: res.json(), secretStillWorks: probe.statusCode };
    }
    return null;
  },
};

/** The owner's view of a task, found through the owner's agents. */
async function taskSnapshot(t: TestApp, owner: TestUser, id: string) {
  const agents = (await call(t.app, 'GET', '/agent/list?limit=100', { token: owner.token })).json().agents;
  for (const agent of agents as Array<{ uuid: string }>) {
    const res = await call(t.app, 'GET', `/agent/${agent.uuid}/task/${id}`, { token: owner.token });
    if (res.statusCode === 200) return res.json();
  }
  return null;
}

// A callback delivery needs a reachable receiver, so the generated context has none to swap; the
// callbacks tests check another user's deliveries are 404.
const WITHOUT_REAL_RESOURCE = new Set<IdKind>(['delivery']);

const CASES = ROUTES.flatMap((route) =>
  (route.ids ?? [])
    .filter((kind) => !WITHOUT_REAL_RESOURCE.has(kind))
    .map((kind) => ({ name: `${routeKey(route)} with another user's ${kind}`, route, kind })),
);

describe.each(DATABASES)('ownership on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('covers every route that takes an id', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(5);
  });

  it.each(CASES)('$name: 404 like a missing id, and nothing changes', async ({ route, kind }) => {
    const me = await createUser(t);
    const other = await createUser(t);
    const { ctx: mine } = await createRouteContext(t, me);
    const { ctx: theirs, secrets } = await createRouteContext(t, other);
    const before = await SNAPSHOTS[kind](t, other, theirs[kind], secrets);
    expect(JSON.stringify(before)).toContain(theirs[kind]);

    const credentials = route.auth === 'user' ? [bearer(me.token), ...keyHeaders(me.key)] : [bearer(me.token)];
    for (const headers of credentials) {
      const foreign = await sendRoute(t, route, { ...mine, [kind]: theirs[kind] }, headers);
      const missing = await sendRoute(t, route, { ...mine, [kind]: freshId(kind) }, headers);
      const foreignBody = expectErrorEnvelope(foreign, 404, 'NOT_FOUND');
      const missingBody = expectErrorEnvelope(missing, 404, 'NOT_FOUND');
      expect(withoutVolatileMeta(foreignBody)).toEqual(withoutVolatileMeta(missingBody));
      expect(foreign.body).not.toContain(theirs[kind]);
    }

    expect(await SNAPSHOTS[kind](t, other, theirs[kind], secrets)).toEqual(before);
    // The same request on the caller's own resource succeeds: the 404 above is about ownership.
    const own = await sendRoute(t, route, mine, bearer(me.token));
    expect({ status: own.statusCode, body: own.body }).toMatchObject({ status: route.status });
  });

  it.each(ROUTES.filter((r) => r.method === 'GET' && !r.ids))(
    '$method $path shows nothing of another user',
    async (route) => {
      const me = await createUser(t);
      const other = await createUser(t);
      const { ctx: mine } = await createRouteContext(t, me);
      const { ctx: theirs, secrets } = await createRouteContext(t, other);
      const res = await sendRoute(t, route, mine, bearer(me.token));
      expect(res.statusCode).toBe(route.status);
      const secretsOfOther = [
        other.uuid,
        other.email,
        other.keyUuid,
        theirs.agent,
        theirs.platformKey,
        theirs.ingestToken,
        theirs.trace,
        theirs.modelRoute,
        secrets.platformKey.slice(0, 16),
        secrets.ingestToken.slice(0, 8),
      ];
      for (const value of secretsOfOther) expect(res.body).not.toContain(value);
      // Positive control: the caller's own resources of the listed kind do appear.
      const ownIds = [
        mine.agent,
        mine.platformKey,
        mine.ingestToken,
        mine.trace,
        mine.providerCredential,
        mine.modelCall,
        mine.modelRoute,
      ];
      if (!route.path.includes('webhook_signing_secret') && route.showsOwn !== false) {
        expect(ownIds.some((id) => res.body.includes(id))).toBe(true);
      }
    },
  );
});
