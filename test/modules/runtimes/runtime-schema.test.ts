import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { type Receiver, startReceiver } from '../../helpers/callbacks.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { pushAgent } from '../../helpers/push-agent.js';
import { submitTask, waitForStatus } from '../../helpers/tasks.js';

/*
 * The runtime union on POST and PATCH /agent, with private addresses refused (the production
 * default): each bad runtime is a 400 naming its path, and an http agent whose name later
 * resolves to a private address is refused at connect time.
 */
describe.each(DATABASES)('agent runtimes: validation and the outbound guard on $name', (shared) => {
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let receiver: Receiver;
  let user: TestUser;
  // The agent's host resolves to a public address when the agent is saved, then to loopback (rebinding).
  let rebound = false;
  const lookup = async (host: string): Promise<LookupAddress[]> => {
    if (host !== 'agent.example') throw new Error(`unexpected lookup of ${host}`);
    return [{ address: rebound ? '127.0.0.1' : '93.184.216.34', family: 4 }];
  };

  const create = (runtime: unknown) =>
    call(t.app, 'POST', '/agent', { token: user.token, body: { name: 'r', runtime } });
  const refusedAt = async (runtime: unknown) => {
    const res = await create(runtime);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('INVALID_REQUEST');
    return res.json().error.details.field as string;
  };

  beforeAll(async () => {
    receiver = await startReceiver(pushAgent);
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { config: { sweepIntervalMs: 100 }, lookup });
    user = await createUser(t);
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await drop();
  });

  it('names the path of each bad field, in the variant the type chose', async () => {
    const http = { type: 'http', url: 'https://93.184.216.34/run' };
    const cases: Array<[unknown, string]> = [
      ['http', 'runtime'],
      [{ type: 'teleport' }, 'runtime'],
      [{ url: 'https://93.184.216.34/' }, 'runtime.type'],
      [{ type: 'openai', provider_credential_uuid: crypto.randomUUID(), model: 5 }, 'runtime.model'],
      [{ type: 'http' }, 'runtime.url'],
      [{ ...http, extra: 1 }, 'runtime.extra'],
      [{ ...http, timeout_seconds: 0 }, 'runtime.timeout_seconds'],
      [{ ...http, timeout_seconds: 301 }, 'runtime.timeout_seconds'],
      [{ ...http, lease_seconds: 601 }, 'runtime.lease_seconds'],
      [{ ...http, lease_seconds: 1.5 }, 'runtime.lease_seconds'],
      [{ ...http, headers: { Host: 'x' } }, 'runtime.headers.Host'],
      [{ ...http, headers: { 'content-TYPE': 'x' } }, 'runtime.headers.content-TYPE'],
      [{ ...http, headers: { 'Webhook-Signature': 'x' } }, 'runtime.headers.Webhook-Signature'],
      [{ ...http, headers: { 'A2A-Version': '1.0' } }, 'runtime.headers.A2A-Version'],
      [{ ...http, headers: { 'bad name': 'x' } }, 'runtime.headers.bad name'],
      [{ ...http, headers: { 'x-a': 5 } }, 'runtime.headers.x-a'],
      [{ ...http, headers: { 'x-a': 'v'.repeat(4097) } }, 'runtime.headers.x-a'],
      [{ ...http, headers: Object.fromEntries([...Array(21).keys()].map((i) => [`x-${i}`, 'v'])) }, 'runtime.headers'],
      [{ ...http, headers: { 'X-A': '1', 'x-a': '2' } }, 'runtime.headers'],
      [{ ...http, headers: { 'X-A': '********' } }, 'runtime.headers'],
      [{ ...http, url: 'ftp://93.184.216.34/' }, 'runtime.url'],
      [{ ...http, url: 'https://93.184.216.34/run?x=1' }, 'runtime.url'],
      [{ ...http, url: 'https://user:pw@93.184.216.34/' }, 'runtime.url'],
      [{ ...http, url: 'http://127.0.0.1:8080/run' }, 'runtime.url'],
      [{ ...http, url: 'http://[::ffff:10.0.0.1]/run' }, 'runtime.url'],
      [{ type: 'a2a' }, 'runtime.agent_card_url'],
      [{ type: 'a2a', agent_card_url: 'http://169.254.169.254/card' }, 'runtime.agent_card_url'],
      [{ type: 'a2a', agent_card_url: 'https://93.184.216.34/card', timeout_seconds: 3 }, 'runtime.timeout_seconds'],
    ];
    const fields = [];
    for (const [runtime] of cases) fields.push(await refusedAt(runtime));
    expect(fields).toEqual(cases.map(([, field]) => field));
  });

  it('accepts each runtime as given and answers it as stored, without defaults, headers masked', async () => {
    const runtimes: Array<Record<string, unknown> & { headers?: Record<string, string> }> = [
      { type: 'worker' },
      { type: 'http', url: 'https://93.184.216.34/run' },
      {
        type: 'http',
        url: 'https://agent.example/run/',
        headers: { Authorization: 'Bearer abc', 'X-Trace-Me': '' },
        timeout_seconds: 300,
        lease_seconds: 600,
      },
      { type: 'a2a', agent_card_url: 'https://agent.example/.well-known/agent-card.json', headers: { 'x-key': 'k' } },
    ];
    for (const runtime of runtimes) {
      const res = await create(runtime);
      expect(res.statusCode, res.body).toBe(201);
      const masked = runtime.headers
        ? { ...runtime, headers: Object.fromEntries(Object.keys(runtime.headers).map((k) => [k, '********'])) }
        : runtime;
      expect(res.json().runtime).toEqual(masked);
      const got = await call(t.app, 'GET', `/agent/${res.json().uuid}`, { token: user.token });
      expect(got.json().runtime).toEqual(masked);
    }
    const list = await call(t.app, 'GET', '/agent/list?limit=100', { token: user.token });
    expect(list.body).not.toContain('Bearer abc');
  });

  it('refuses at connect time an agent whose name now resolves to a private address: DELIVERY_FAILED, nothing sent', async () => {
    rebound = false;
    const agent = await createAgent(t, user, {
      runtime: { type: 'http', url: `http://agent.example:${receiver.port}/sync` },
    });
    rebound = true;
    const { task_id } = await submitTask(t, user, agent.uuid);
    const failed = await waitForStatus(t, user, agent.uuid, task_id, 'failed', 15_000);
    expect(failed.error?.code).toBe('DELIVERY_FAILED');
    expect(failed.error?.message).toContain('private');
    expect(receiver.requests).toHaveLength(0);
  });
});
