// node bench/stored-tasks.js [sqlite|postgres]: does a status GET cost more when the database
// holds many tasks? Measures GETs of 1,000 different tasks with 10,000 tasks stored, then fills
// the same agent's table to STORED_TASKS (default 1,000,000) and measures again: requests/s and
// the server's CPU µs per request, and their ratio (the bound: ≥ 0.8).
//
// The tasks are submitted over HTTP up to 10,000; the rest are copies of a finished task written
// straight into the database by one INSERT … SELECT (submitting a million over HTTP would take
// the whole benchmark's time): every one in the same agent, so the agent's indexes grow too.
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import SqliteDatabase from '../dist/db/sqlite-driver.js';
import { cpuUs, setupTaskhook } from './servers.js';

const mode = process.argv[2] ?? 'sqlite';
const STORED = Number(process.env.STORED_TASKS ?? 1_000_000);
const SMALL = 10_000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
async function submitMany(th, n) {
  const ids = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        next++;
        const res = await fetch(th.submitUrl, { method: 'POST', headers: th.headers, body: th.submitBody });
        if (res.status !== 202) throw new Error(`submit: ${res.status} ${await res.text()}`);
        ids.push((await res.json()).task_id);
      }
    }),
  );
  return ids;
}

/** GETs of `ids` in turn over 50 connections for SECONDS: req/s and server CPU µs per request. */
async function measure(th, ids) {
  const requests = ids.map((id) => ({ method: 'GET', path: `/agent/${th.agent.uuid}/task/${id}` }));
  const run = (duration) => autocannon({ url: th.base, headers: th.headers, requests, connections: 50, duration });
  await run(2);
  const before = cpuUs(th.pid);
  const r = await run(SECONDS);
  if (r.non2xx) throw new Error(`${r.non2xx} GETs were not 2xx`);
  return {
    rps: Math.round(r.requests.average),
    cpu_us_per_request: Math.round((cpuUs(th.pid) - before) / r.requests.total),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
  };
}

/** PostgreSQL's maintenance of the tasks table done before a measurement, not during it. */
async function settle(th) {
  if (mode !== 'postgres') return;
  const client = new pg.Client({ connectionString: th.databaseUrl });
  await client.connect();
  // Autovacuum would otherwise start on the new rows and share the two cores with the server
  // while it is measured: a steady state is what is compared.
  await client.query('vacuum analyze tasks');
  await client.query('checkpoint');
  await client.end();
}

/** Copies of one of the agent's tasks as completed tasks, `n` of them, in one statement. */
async function fill(th, templateId, n) {
  const copy = (uuidExpr, now) => `
    insert into tasks (uuid, agent_uuid, user_uuid, status, ready, priority, message, messages, metadata,
      callback_mode, webhook_url, timeout_seconds, attempt, estimated_start, created_at, updated_at,
      started_at, completed_at, result, seq)
    select ${uuidExpr}, agent_uuid, user_uuid, 'completed', ${mode === 'postgres' ? 'false' : '0'}, priority,
      message, messages, metadata, callback_mode, webhook_url, timeout_seconds, 1, estimated_start,
      created_at, ${now}, ${now}, ${now}, '{"summary":"done"}', 3
    from tasks`;
  if (mode === 'postgres') {
    const client = new pg.Client({ connectionString: th.databaseUrl });
    await client.connect();
    await client.query(`${copy('gen_random_uuid()::text', 'updated_at')}, generate_series(1, $2) where uuid = $1`, [
      templateId,
      n,
    ]);
    await client.end();
    return;
  }
  const db = new SqliteDatabase(path.join(th.env.TASKHOOK_DATA_DIR, 'taskhook.sqlite'));
  db.pragma('busy_timeout = 60000');
  const uuid = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;
  db.prepare(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
     ${copy(uuid, 'updated_at').replace('from tasks', 'from tasks, n')} where uuid = ?`,
  ).run(n, templateId);
  db.close();
}

const th = await setupTaskhook({ mode, port: Number(process.env.BENCH_PORT ?? 19150) });
try {
  const ids = await submitMany(th, SMALL - 1);
  const sample = ids.slice(0, 1000);
  await settle(th);
  const small = await measure(th, sample);
  console.error(`[stored-tasks] ${mode}: ${SMALL} stored: ${JSON.stringify(small)}; filling to ${STORED}…`);
  const started = Date.now();
  await fill(th, ids[0], STORED - SMALL);
  await settle(th);
  console.error(`[stored-tasks] filled in ${Math.round((Date.now() - started) / 1000)} s`);
  const large = await measure(th, sample);
  const out = {
    database: mode,
    small: { stored: SMALL, ...small },
    large: { stored: STORED, ...large },
    rps_ratio: +(large.rps / small.rps).toFixed(3),
    cpu_ratio: +(small.cpu_us_per_request / large.cpu_us_per_request).toFixed(3),
  };
  console.log(JSON.stringify(out, null, 2));
} finally {
  await th.stop();
}
