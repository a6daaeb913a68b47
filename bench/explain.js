// node bench/explain.js [sqlite|postgres] > plans.md   (after `npm run build`)
// Captures every statement the hot requests and background jobs send (submit, status GET, list,
// claim, progress, complete, webhook receive, sweep, callbacks, housekeeping, schedules) and
// prints the plan the database chooses for each, over 20,000 stored tasks. PostgreSQL runs in a
// fresh database (or DATABASE_URL's, which should be empty) with sequential scans disabled, so
// the plan shows which index serves the statement (on tiny tables the planner would rightly prefer
// a scan). SQLite runs in a temporary data directory without statistics, as the service runs it
// (it never runs ANALYZE): its plan says SEARCH … USING INDEX for a lookup through an index and
// SCAN for a full pass over a table. A statement counts for the step in whose async context it
// was first sent. One sent outside every step's context while a step ran (a background loop's
// timer, or SQLite's group commit running a write in its first caller's context) is listed as
// "step, or a loop", unless a step sends it later.

import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { buildApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';
import SqliteDatabase from '../dist/db/sqlite-driver.js';
import { createLogger, openProcessDeps } from '../dist/process-deps.js';
import { cliJson, dropPgDatabase, freshPgDatabase } from './servers.js';

const mode = process.argv[2] ?? (process.env.DATABASE_URL ? 'postgres' : 'sqlite');
if (mode !== 'sqlite' && mode !== 'postgres') throw new Error(`unknown database ${mode}: sqlite or postgres`);
const postgres = mode === 'postgres';
const madeDb = postgres && !process.env.DATABASE_URL ? `taskhook_explain_${process.pid}` : null;
const databaseUrl = postgres ? (process.env.DATABASE_URL ?? (await freshPgDatabase(madeDb))) : undefined;

// Statements sent while a step runs, each text once with the first step that sent it.
const seen = new Map();
const steps = new AsyncLocalStorage();
let running;
const WATCHED = /^\s*(with|select|update|delete|insert)/i;
function watch(text, params) {
  const step = steps.getStore();
  const label = step ?? (running && `${running}, or a loop`);
  if (!label || !WATCHED.test(text) || /pg_notify|pg_try_advisory|^select 1$/.test(text)) return;
  const known = seen.get(text);
  if (!known || (step && !known.step)) seen.set(text, { label, step, params: Array.isArray(params) ? params : [] });
}
if (postgres) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (text, values, ...rest) {
    if (typeof text === 'string') watch(text, values);
    else watch(text.text, text.values);
    return query.call(this, text, values, ...rest);
  };
} else {
  // Every better-sqlite3 statement of the process shares this prototype; Kysely passes the parameters as one array.
  const statement = Object.getPrototypeOf(new SqliteDatabase(':memory:').prepare('select 1'));
  for (const method of ['all', 'get', 'run', 'iterate']) {
    const original = statement[method];
    statement[method] = function (...args) {
      watch(this.source, args.length === 1 && Array.isArray(args[0]) ? args[0] : args);
      return original.apply(this, args);
    };
  }
}

const env = {
  TASKHOOK_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'taskhook-explain-')),
  TASKHOOK_LOG_LEVEL: 'silent',
  TASKHOOK_RATE_LIMIT: '10000000',
  TASKHOOK_CREDENTIAL_CACHE_MS: '0',
  TASKHOOK_SWEEP_INTERVAL_MS: '86400000',
  TASKHOOK_HOUSEKEEPING_INTERVAL_MS: '86400000',
  ...(databaseUrl
    ? {
        DATABASE_URL: databaseUrl,
        // PostgreSQL mode takes its secrets from the environment only.
        TASKHOOK_JWT_SECRET: 'bench-jwt-secret-of-at-least-32-characters',
        TASKHOOK_ENCRYPTION_KEY: 'bench-encryption-key-of-at-least-32-chars',
      }
    : {}),
};
const email = `explain-${Date.now()}@example.test`;
cliJson(['user', 'create', '--email', email, '--password', 'long password here', '--verified'], env);
const { key } = cliJson(['key', 'create', '--email', email, '--name', 'k'], env);

const config = loadConfig(env);
const runtime = await openProcessDeps(config, { logger: createLogger(config) });
const app = await buildApp(config, runtime);
await app.ready();
const h = { 'x-api-key': key, 'content-type': 'application/json' };
const inject = (method, url, payload) => app.inject({ method, url, headers: h, payload });
const agent = (await inject('POST', '/agent', { name: 'a', concurrency: 1000 })).json();
const idle = (await inject('POST', '/agent', { name: 'idle' })).json();
const trig = (await inject('POST', `/v1/agent/${agent.uuid}/triggers`, { name: 't', message_template: 'x' })).json();
const schedule = await inject('POST', `/v1/agent/${agent.uuid}/schedules`, {
  name: 's',
  cron: '* * * * *',
  message: 'tick',
});
if (schedule.statusCode !== 201) throw new Error(`schedule: ${schedule.statusCode} ${schedule.body}`);

// Volume: 20,000 tasks on another agent (a third of them finished), so plans are those of a table with history.
const raw = (text, params = []) => runtime.db.kysely.executeQuery(CompiledQuery.raw(text, params));
const seed = (await inject('POST', `/agent/request/${idle.uuid}`, { message: 'seed' })).json().task_id;
const copied = [
  'agent_uuid',
  'workspace_uuid',
  'priority',
  'message',
  'messages',
  'metadata',
  'callback_mode',
  'timeout_seconds',
  'attempt',
  'estimated_start',
  'created_at',
  'updated_at',
  'seq',
].join(', ');
const newUuid = postgres ? 'gen_random_uuid()::text' : 'lower(hex(randomblob(16)))';
await raw(
  `with recursive g(n) as (select 1 union all select n + 1 from g where n < 20000)
   insert into tasks (uuid, status, ready, ${copied})
   select ${newUuid}, case when n % 3 = 0 then 'completed' else 'queued' end, n % 3 <> 0, ${copied}
   from tasks, g where uuid = ${postgres ? '$1' : '?'}`,
  [seed],
);
if (postgres) await raw('analyze');

const order = [];
async function step(name, fn) {
  order.push(name);
  running = name;
  // Inside the step's context: an injected request starts when it is awaited.
  await steps.run(name, async () => {
    await fn();
  });
  running = undefined;
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
await step('schedules', () => app.background.schedule());

/** The plan's steps, one line each, joined with ' / '. */
async function planOf(text, params) {
  if (!postgres) {
    const { rows } = await raw(`explain query plan ${text}`, params);
    return rows.map((row) => row.detail).join(' / ');
  }
  await client.query('begin');
  try {
    const r = await client.query(`explain ${text}`, params);
    return r.rows.map((row) => row['QUERY PLAN'].trim()).join(' / ');
  } finally {
    await client.query('rollback');
  }
}

const pool = postgres ? new pg.Pool({ connectionString: databaseUrl, max: 1 }) : null;
const client = pool ? await pool.connect() : null;
await client?.query('set enable_seqscan = off');
const over = postgres ? 'PostgreSQL, seq scans off' : 'SQLite, no statistics';
console.log(`| request | statement | plan (${over}, 20,000 tasks) |\n|---|---|---|`);
const short = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s).replace(/\s+/g, ' ').replaceAll('|', '\\|');
const rank = (label) => order.indexOf(label.replace(/, or a loop$/, ''));
const rows = [...seen].sort(([, a], [, b]) => rank(a.label) - rank(b.label));
for (const [text, { label: name, params }] of rows) {
  let plan;
  try {
    plan = await planOf(text, params);
  } catch (err) {
    plan = `(not explained: ${err.message})`;
  }
  console.log(`| ${name} | \`${short(text, 140)}\` | ${short(plan, 400)} |`);
}
client?.release();
await pool?.end();
await app.close();
await runtime.close();
if (madeDb) await dropPgDatabase(madeDb);
process.exit(0);
