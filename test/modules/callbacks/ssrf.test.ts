import type { LookupAddress } from 'node:dns';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { eventually, type Receiver, startReceiver } from '../../helpers/callbacks.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { cancelTask, listTasks, submitTask, workerHeaders } from '../../helpers/tasks.js';

/*
 * With TASKHOOK_ALLOW_PRIVATE_URLS unset, no callback reaches a private destination,
 * whether it is written as a literal, a numeric form, a name, or a name that changes its answer
 * between the check at submit and the connection (DNS rebinding). A canary on 127.0.0.1 counts
 * every request that gets through.
 */

const HOSTNAME = os.hostname();

/**
 * The machine's own name, answered 127.0.0.1 by the test's own resolver (as /etc/hosts usually
 * does), so that no DNS server is ever asked; any other name does not resolve.
 */
async function hostnameLookup(host: string): Promise<LookupAddress[]> {
  return host === HOSTNAME ? [{ address: '127.0.0.1', family: 4 }] : [];
}

/** Answers a public address the first time a name is asked for, and 127.0.0.1 afterwards. */
function rebindingLookup() {
  const asked = new Map<string, number>();
  const lookup = async (host: string): Promise<LookupAddress[]> => {
    const n = (asked.get(host) ?? 0) + 1;
    asked.set(host, n);
    return [{ address: n === 1 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
  };
  return { lookup, asked };
}

describe.each(DATABASES)('callback SSRF guard on $name', (database) => {
  let canary: Receiver;
  let drop: () => Promise<void> = async () => undefined;
  let storage = database;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    canary = await startReceiver();
    const own = await ownDatabase(database);
    drop = own.drop;
    storage = own.database;
  });
  afterAll(async () => {
    await Promise.all(apps.map((t) => t.close()));
    await canary?.close();
    await drop();
  });

  /**
   * An app on this file's storage, closed before the next one starts: every app's dispatcher sends
   * every due callback of its storage, with its own resolver.
   */
  async function app(opts: Parameters<typeof buildTestApp>[1] = {}): Promise<TestApp> {
    await Promise.all(apps.splice(0).map((t) => t.close()));
    const t = await buildTestApp(storage, opts);
    apps.push(t);
    return t;
  }

  it('refuses private destinations in every form at submit: 400 on webhook_url, no task, no request', async () => {
    const t = await app({ lookup: hostnameLookup });
    expect(t.config.allowPrivateUrls).toBe(false);
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const port = canary.port;
    const urls = [
      `http://127.0.0.1:${port}/hook`,
      `http://localhost:${port}/hook`,
      `http://[::1]:${port}/hook`,
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      `http://[::ffff:127.0.0.1]:${port}/hook`,
      `http://2130706433:${port}/hook`,
      `http://0x7f000001:${port}/hook`,
      `http://0x7f.1:${port}/hook`,
      `http://${HOSTNAME}:${port}/hook`,
    ];
    for (const url of urls) {
      const res = await call(t.app, 'POST', `/agent/request/${agent}`, {
        headers: workerHeaders(user),
        body: { message: 'call me back', callback_mode: 'webhook', webhook_url: url },
      });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
      expect(res.json().error, url).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { field: 'webhook_url', reason: expect.any(String) },
      });
    }
    expect((await listTasks(t, user, agent)).pagination.total).toBe(0);
    expect(canary.requests).toHaveLength(0);
  });

  it('checks the address again at connect time: a name that rebinds to 127.0.0.1 never reaches it', async () => {
    const { lookup, asked } = rebindingLookup();
    const t = await app({ lookup, config: { callbackRetrySchedule: [0.2, 0.2, 0.2] } });
    expect(t.config.allowPrivateUrls).toBe(false);
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const host = 'rebinding.example.com';
    const { task_id } = await submitTask(t, user, agent, {
      callback_mode: 'webhook',
      webhook_url: `http://${host}:${canary.port}/hook`,
    });
    expect(asked.get(host)).toBe(1);
    expect((await cancelTask(t, user, agent, task_id)).statusCode).toBe(200);

    const path = `/agent/${agent}/task/${task_id}/deliveries`;
    const delivery = await eventually(async () => {
      const res = await call(t.app, 'GET', path, { headers: workerHeaders(user) });
      const [d] = res.json().deliveries as Array<{ status: string; attempts: unknown[] }>;
      return d && d.status !== 'pending' ? d : undefined;
    }, 'the delivery to give up');
    expect(delivery).toMatchObject({ status: 'failed', next_attempt_at: null });
    expect(delivery.attempts).toHaveLength(4);
    for (const attempt of delivery.attempts) {
      expect(attempt).toMatchObject({ status_code: null, error: expect.stringMatching(/EPRIVATEADDRESS|private/) });
    }
    // Every attempt asked the resolver again, and every answer was refused.
    expect(asked.get(host)).toBeGreaterThanOrEqual(1 + 4);
    expect(canary.requests).toHaveLength(0);
  });

  it('checks a literal address again at send time: one accepted while allowed is not sent once forbidden', async () => {
    const before = await app({ config: { allowPrivateUrls: true } });
    const user = await createUser(before);
    const agent = (await createAgent(before, user)).uuid;
    const { task_id } = await submitTask(before, user, agent, { callback_mode: 'webhook', webhook_url: canary.url });

    // The same storage (and data dir), restarted with private destinations forbidden.
    const t = await app({ config: { dataDir: before.config.dataDir, callbackRetrySchedule: [0.2, 0.2, 0.2] } });
    expect(t.config.allowPrivateUrls).toBe(false);
    expect((await cancelTask(t, user, agent, task_id)).statusCode).toBe(200);
    const path = `/agent/${agent}/task/${task_id}/deliveries`;
    const delivery = await eventually(async () => {
      const res = await call(t.app, 'GET', path, { headers: workerHeaders(user) });
      const [d] = res.json().deliveries as Array<{ status: string; attempts: unknown[] }>;
      return d && d.status !== 'pending' ? d : undefined;
    }, 'the delivery to give up');
    expect(delivery.status).toBe('failed');
    expect(delivery.attempts).toEqual(
      Array(4).fill({
        at: expect.any(String),
        status_code: null,
        duration_ms: expect.any(Number),
        error: 'private address refused',
      }),
    );
    expect(canary.requests).toHaveLength(0);
  });
});
