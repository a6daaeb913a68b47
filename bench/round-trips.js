// node bench/round-trips.js: the statements one status GET, submit, webhook receive, claim of 50 and
// batch complete of 50 send to PostgreSQL (DATABASE_URL names an empty database), counted on the pg
// client after two warm-up requests; without DATABASE_URL, the statements they run on SQLite (a fresh
// data directory), counted on better-sqlite3.

import { mkdtempSync } from 'node:fs';
import pg from 'pg';
import { buildApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';
import SqliteDatabase from '../dist/db/sqlite-driver.js';
import { createSecretBox } from '../dist/lib/crypto.js';
import { createAccountsModule } from '../dist/modules/accounts/accounts-module.js';
import { createLogger, openProcessDeps } from '../dist/process-deps.js';

const counts = [];
let on = false;
const orig = pg.Client.prototype.query;
pg.Client.prototype.query = function (text, ...rest) {
  if (on) counts.push(typeof text === 'string' ? text.slice(0, 70) : `[named ${text.name}] ${text.text.slice(0, 60)}`);
  return orig.call(this, text, ...rest);
};
const Statement = Object.getPrototypeOf(new SqliteDatabase(':memory:').prepare('select 1'));
for (const method of ['all', 'get', 'run', 'iterate']) {
  const original = Statement[method];
  Statement[method] = function (...args) {
    if (on) counts.push(`[sqlite ${method}] ${this.source.slice(0, 70)}`);
    return original.apply(this, args);
  };
}
const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL,
  TASKHOOK_DATA_DIR: mkdtempSync('/tmp/w9rt-'),
  TASKHOOK_LOG_LEVEL: 'silent',
  TASKHOOK_RATE_LIMIT: '100000',
  // PostgreSQL mode takes its secrets from the environment only.
  TASKHOOK_JWT_SECRET: 'bench-jwt-secret-of-at-least-32-characters',
  TASKHOOK_ENCRYPTION_KEY: 'bench-encryption-key-of-at-least-32-chars',
  ...(process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}),
});
const runtime = await openProcessDeps(config, { logger: createLogger(config) });
const app = await buildApp(config, runtime);
await app.ready();
const accounts = createAccountsModule({ config, runtime, box: createSecretBox(runtime.secrets.encryptionKey) }).service;
const email = `rt-${Date.now()}@x.test`;
const u = await accounts.createUser({ email, password: 'long password here', verified: true, agentsEnabled: true });
const { key } = await accounts.createPlatformKey(u.uuid, 'k');
const h = { 'x-api-key': key, 'content-type': 'application/json' };
const agent = (
  await app.inject({ method: 'POST', url: '/agent', headers: h, payload: { name: 'a', concurrency: 1000 } })
).json();
const trig = (
  await app.inject({
    method: 'POST',
    url: `/v1/agent/${agent.uuid}/triggers`,
    headers: h,
    payload: { name: 't', message_template: 'x {{payload.a}}' },
  })
).json();
await new Promise((r) => setTimeout(r, 300));
async function measure(name, req, before = async () => undefined) {
  for (let i = 0; i < 2; i++) {
    await before();
    await app.inject(await req()); // warm: caches, touch
  }
  await before();
  const request = await req();
  counts.length = 0;
  on = true;
  const r = await app.inject(request);
  on = false;
  console.log(`${name}: ${r.statusCode}, ${counts.length} round trips`);
  for (const c of counts) console.log('   ', c);
  return r;
}
const sub = () => ({
  method: 'POST',
  url: `/agent/request/${agent.uuid}`,
  headers: h,
  payload: { message: 'hi', priority: 5 },
});
const first = (await app.inject(sub())).json();
await measure('GET', () => ({ method: 'GET', url: `/agent/${agent.uuid}/task/${first.task_id}`, headers: h }));
await measure('submit', sub);
await measure('webhook', () => ({
  method: 'POST',
  url: `/v1/webhooks/triggers/${trig.uuid}`,
  headers: { 'content-type': 'application/json', 'x-webhook-secret': trig.webhook_secret },
  payload: { a: 1 },
}));
// A claim of 50 with 50 queued tasks, then a batch complete of the 50 it handed out.
const BATCH = 50;
const queue50 = async () => {
  for (let i = 0; i < BATCH; i++) await app.inject(sub());
};
const claimUrl = `/agent/${agent.uuid}/tasks/claim`;
const claim = () => ({ method: 'POST', url: claimUrl, headers: h, payload: { max_tasks: BATCH } });
let claimed = [];
const claimFor = async () => {
  await queue50();
  claimed = (await app.inject(claim())).json().tasks;
};
const completeAll = () => ({
  method: 'POST',
  url: `/agent/${agent.uuid}/tasks/complete`,
  headers: h,
  payload: {
    tasks: claimed.map((t) => ({ task_id: t.task_id, lease_id: t.lease_id, result: { summary: 'ok', findings: [] } })),
  },
});
// Drain what earlier requests left queued, so each claim takes exactly the 50 just submitted.
while ((await app.inject(claim())).json().tasks.length > 0);
await measure(`claim of ${BATCH}`, claim, queue50);
await measure(`batch complete of ${BATCH}`, completeAll, claimFor);
await app.close();
await runtime.close();
process.exit(0);
