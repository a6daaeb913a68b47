// DATABASE_URL=postgres://…/empty_db node bench/explain.js > plans.md
// Captures every statement the hot requests and background jobs send to PostgreSQL (status GET,
// submit, claim, complete, webhook receive, event stream catch-up, list, sweep, callbacks,
// housekeeping) and prints the plan PostgreSQL chooses for each, over 20,000 stored tasks, with
// sequential scans disabled so the plan shows which index serves the statement (on tiny tables
// the planner would rightly prefer a scan).

import { mkdtempSync } from 'node:fs';
import pg from 'pg';
import { buildApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';
import { createSecretBox } from '../dist/lib/crypto.js';
import { createAccountsModule } from '../dist/modules/accounts/accounts-module.js';
import { createLogger, openProcessDeps } from '../dist/process-deps.js';

const seen = new Map();
let label = null;
const orig = pg.Client.prototype.query;
pg.Client.prototype.query = function (text, values, ...rest) {
  const sql = typeof text === 'string' ? text : text.text;
  const params = typeof text === 'string' ? values : text.values;
  if (label && /^\s*(select|update|delete|insert)/i.test(sql) && !/pg_notify|pg_try_advisory/.test(sql)) {
    if (!seen.has(sql)) seen.set(sql, { label, params: Array.isArray(params) ? params : [] });
  }
  return orig.call(this, text, values, ...rest);
};

const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL,
  TASKHOOK_DATA_DIR: mkdtempSync('/tmp/taskhook-explain-'),
  TASKHOOK_LOG_LEVEL: 'silent',
  TASKHOOK_RATE_LIMIT: '10000000',
  TASKHOOK_CREDENTIAL_CACHE_MS: '0',
  // PostgreSQL mode takes its secrets from the environment only.
  TASKHOOK_JWT_SECRET: 'bench-jwt-secret-of-at-least-32-characters',
  TASKHOOK_ENCRYPTION_KEY: 'bench-encryption-key-of-at-least-32-chars',
});
const runtime = await openProcessDeps(config, { logger: createLogger(config) });
const app = await buildApp(config, runtime);
await app.ready();
const accounts = createAccountsModule({ config, runtime, box: createSecretBox(runtime.secrets.encryptionKey) }).service;
const u = await accounts.createUser({
  email: `explain-${Date.now()}@x.test`,
  password: 'long password here',
  verified: true,
  agentsEnabled: true,
});
const { key } = await accounts.createPlatformKey(u.uuid, 'k');
const h = { 'x-api-key': key, 'content-type': 'application/json' };
const inject = (method, url, payload) => app.inject({ method, url, headers: h, payload });
const agent = (await inject('POST', '/agent', { name: 'a', concurrency: 1000 })).json();
const idle = (await inject('POST', '/agent', { name: 'idle' })).json();
const trig = (await inject('POST', `/v1/agent/${agent.uuid}/triggers`, { name: 't', message_template: 'x' })).json();

// Volume: 20,000 tasks on another agent, so plans are those of a table with history.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
const seed = (await inject('POST', `/agent/request/${idle.uuid}`, { message: 'seed' })).json().task_id;
const copied = [
  'user_uuid',
  'priority',
  'message',
  'messages',
  'metadata',
  'callback_mode',
  'timeout_seconds',
  'attempt',
];
const extra = ['estimated_start', 'created_at', 'updated_at', 'seq'];
await pool.query(
  `insert into tasks (uuid, agent_uuid, status, ready, ${[...copied, ...extra].join(', ')})
   select gen_random_uuid()::text, agent_uuid, case when g % 3 = 0 then 'completed' else 'queued' end, g % 3 <> 0,
     ${[...copied, ...extra].join(', ')}
   from tasks, generate_series(1, 20000) g where uuid = $1`,
  [seed],
);
await pool.query('analyze');

async function step(name, fn) {
  label = name;
  await fn();
  label = null;
}
const submitted = [];
await step('submit', async () =>
  submitted.push((await inject('POST', `/agent/request/${agent.uuid}`, { message: 'hi' })).json()),
);
const taskId = submitted[0].task_id;
await step('status GET', () => inject('GET', `/agent/${agent.uuid}/task/${taskId}`));
await step('task list', () => inject('GET', `/agent/${agent.uuid}/tasks?status=queued&limit=20`));
let claimed;
await step('claim', async () => {
  claimed = (await inject('POST', `/agent/${agent.uuid}/tasks/claim`, { max_tasks: 1 })).json().tasks[0];
});
await step('progress', () =>
  inject('POST', `/agent/${agent.uuid}/task/${claimed.task_id}/progress`, { lease_id: claimed.lease_id }),
);
await step('complete', () =>
  inject('POST', `/agent/${agent.uuid}/task/${claimed.task_id}/complete`, {
    lease_id: claimed.lease_id,
    result: { summary: 'ok' },
  }),
);
await step('webhook receive', () =>
  app.inject({
    method: 'POST',
    url: `/v1/webhooks/triggers/${trig.uuid}`,
    headers: { 'content-type': 'application/json', 'x-webhook-secret': trig.webhook_secret },
    payload: { a: 1 },
  }),
);
await step('sweeper', () => app.background.sweep());
await step('callbacks', () => app.background.deliverCallbacks());
await step('housekeeping', () => app.background.housekeep());

const client = await pool.connect();
await client.query('set enable_seqscan = off');
console.log('| request | statement | plan (PostgreSQL, seq scans off, 20,000 tasks) |\n|---|---|---|');
for (const [sql, { label: name, params }] of seen) {
  let plan;
  try {
    await client.query('begin');
    const r = await client.query(`explain ${sql}`, params);
    plan = r.rows.map((row) => row['QUERY PLAN'].trim()).join(' / ');
  } catch (err) {
    plan = `(not explained: ${err.message})`;
  } finally {
    await client.query('rollback');
  }
  const short = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s).replaceAll('|', '\\|').replace(/\s+/g, ' ');
  console.log(`| ${name} | \`${short(sql, 140)}\` | ${short(plan, 400)} |`);
}
client.release();
await pool.end();
await app.close();
await runtime.close();
process.exit(0);
