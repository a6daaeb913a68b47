import { request } from 'node:http';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { eventually, startReceiver } from '../../helpers/callbacks.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { claimOne, reportComplete, submitTask } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';

interface Family {
  name: string;
  type: string;
  metrics: Array<{ value?: string; count?: string; labels?: Record<string, string> }>;
}

const parse = (text: string) => parsePrometheusTextFormat(text) as Family[];

function sample(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  if (!family) throw new Error(`no metric ${name}`);
  const match = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(match?.value ?? match?.count ?? 0);
}

describe.each(DATABASES)('metrics on $name', (shared) => {
  const clock = manualClock();
  let t: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // Gauges count every task in the database: storage of its own keeps other files' tasks out.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, {
      clock,
      config: { metrics: true, sweepIntervalMs: 3_600_000, allowPrivateUrls: true },
    });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  async function scrape(): Promise<Family[] & { text: string }> {
    clock.advance(10_000); // past the storage read interval
    const res = await call(t.app, 'GET', '/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return Object.assign(parse(res.body), { text: res.body });
  }

  /** A histogram's `_count` for one label set (the parser keeps no labels for histograms). */
  function requests(families: { text: string }, route: string, statusClass = '2xx'): number {
    const labels = `method="POST",route="${route}",status_class="${statusClass}"`;
    const line = families.text
      .split('\n')
      .find((l) => l.startsWith(`taskhook_http_request_duration_seconds_count{${labels}}`));
    return Number(line?.split(' ').at(-1) ?? 0);
  }

  it('serves Prometheus text that parses, with process and event-loop metrics', async () => {
    const families = await scrape();
    const names = families.map((f) => f.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'taskhook_process_cpu_seconds_total',
        'taskhook_process_resident_memory_bytes',
        'taskhook_nodejs_eventloop_lag_seconds',
        'taskhook_http_request_duration_seconds',
        'taskhook_tasks',
        'taskhook_queue_depth',
        'taskhook_callbacks_pending',
        'taskhook_callback_oldest_pending_age_seconds',
        'taskhook_db_query_duration_seconds',
      ]),
    );
    // The pool's use, on PostgreSQL (SQLite has one connection and no pool).
    expect(names.includes('taskhook_db_pool_connections')).toBe(shared.name === 'postgres');
  });

  it('moves when work is done: request durations by route pattern, tasks by status, queue depth', async () => {
    const before = await scrape();
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    for (let i = 0; i < 3; i++) await submitTask(t, user, agent.uuid);
    await claimOne(t, user, agent.uuid, { max_tasks: 1 });
    const after = await scrape();

    expect(requests(after, '/agent/request/:id')).toBe(requests(before, '/agent/request/:id') + 3);
    const statements = (families: { text: string }) =>
      Number(/^taskhook_db_query_duration_seconds_count (\d+)/m.exec(families.text)?.[1] ?? 0);
    expect(statements(after)).toBeGreaterThan(statements(before));
    expect(sample(after, 'taskhook_tasks', { status: 'queued' })).toBe(
      sample(before, 'taskhook_tasks', { status: 'queued' }) + 2,
    );
    expect(sample(after, 'taskhook_tasks', { status: 'running' })).toBe(
      sample(before, 'taskhook_tasks', { status: 'running' }) + 1,
    );
    expect(sample(after, 'taskhook_queue_depth')).toBe(sample(before, 'taskhook_queue_depth') + 2);
    for (const [operation, n] of [
      ['submit', 3],
      ['claim', 1],
    ] as const) {
      expect(sample(after, 'taskhook_task_transitions_total', { operation })).toBe(
        sample(before, 'taskhook_task_transitions_total', { operation }) + n,
      );
    }
  });

  it('counts callback attempts by outcome', async () => {
    const receiver = await startReceiver();
    try {
      const before = await scrape();
      const user = await createUser(t);
      const agent = await createAgent(t, user);
      const { task_id } = await submitTask(t, user, agent.uuid, {
        callback_mode: 'webhook',
        webhook_url: receiver.url,
      });
      const claimed = await claimOne(t, user, agent.uuid);
      expect(claimed.task_id).toBe(task_id);
      expect((await reportComplete(t, user, agent.uuid, task_id, claimed.lease_id)).statusCode).toBe(200);
      // The running dispatcher sends it after the commit; the counter moves once the attempt is recorded.
      const delivered = (families: Family[]) =>
        sample(families, 'taskhook_callback_attempts_total', { outcome: 'delivered' });
      await eventually(async () => {
        await t.app.background.deliverCallbacks();
        return delivered(await scrape()) === delivered(before) + 1 ? true : undefined;
      }, 'the delivered attempt counted');
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('counts webhook deliveries by answer', async () => {
    const before = await scrape();
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const trigger = await createTrigger(t, user, agent.uuid);
    expect((await deliver(t, trigger.uuid, { secret: trigger.webhook_secret, body: { a: 1 } })).statusCode).toBe(202);
    expect((await deliver(t, trigger.uuid, { secret: 'wrong', body: { a: 1 } })).statusCode).toBe(401);
    const after = await scrape();
    for (const status of ['202', '401']) {
      expect(sample(after, 'taskhook_webhook_deliveries_total', { status })).toBe(
        sample(before, 'taskhook_webhook_deliveries_total', { status }) + 1,
      );
    }
  });

  it('labels unknown paths as one route, so random URLs cannot grow the series without bound', async () => {
    for (let i = 0; i < 3; i++) await call(t.app, 'GET', `/no/such/${i}`);
    const { text } = await scrape();
    expect(text).toContain('route="unmatched",status_class="4xx"');
    expect(text).not.toContain('/no/such');
  });
});

describe('metrics exposure', () => {
  const database = DATABASES[0] as (typeof DATABASES)[number];

  it('is off by default: /metrics is 404', async () => {
    const t = await buildTestApp(database);
    try {
      expect((await call(t.app, 'GET', '/metrics')).statusCode).toBe(404);
    } finally {
      await t.close();
    }
  });

  it('with TASKHOOK_METRICS_PORT, is served on that port only (and counts rate-limit refusals)', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const t = await buildTestApp(database, { config: { metricsPort: port, rateLimit: 2 } });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await call(t.app, 'GET', '/metrics')).statusCode);
      expect(statuses).toEqual([404, 404, 429, 429]);
      const body = await new Promise<string>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
          let text = '';
          res.on('data', (chunk) => {
            text += chunk;
          });
          res.on('end', () => resolve(`${res.statusCode}\n${text}`));
        })
          .on('error', reject)
          .end();
      });
      expect(body.startsWith('200\n')).toBe(true);
      const families = parse(body.slice(4));
      expect(families.some((f) => f.name === 'taskhook_tasks')).toBe(true);
      expect(sample(families, 'taskhook_rate_limit_refusals_total')).toBe(2);
    } finally {
      await t.close();
    }
  });
});
