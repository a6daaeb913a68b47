// node bench/cost.js [sqlite|postgres]: the CPU cost of one request, independent of machine load.
// Runs a fixed number of requests against a server in its own process and reads the server's
// CPU time (and, on PostgreSQL, that of its database backends) from /proc before and after.
// Wall-clock requests/s depend on what else runs on the machine; CPU µs per request do much less.
import autocannon from 'autocannon';
import pg from 'pg';
import { cpuUs, setupTaskhook, startBare } from './servers.js';

const N = Number(process.env.COST_REQUESTS ?? 20_000);
const CONNECTIONS = Number(process.env.COST_CONNECTIONS ?? 32);
// Two loopback ports (the bare route's and taskhook's); taskhook's names its PostgreSQL database too.
const PORT = Number(process.env.COST_PORT ?? 18980);

async function backendPids(url) {
  if (!url) return [];
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const db = new URL(url).pathname.slice(1);
  const { rows } = await client.query(
    'select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
    [db],
  );
  await client.end();
  return rows.map((r) => r.pid);
}

/** Runs `amount` requests and returns µs of CPU per request in the server (and database). */
export async function measureCost(pid, databaseUrl, opts) {
  const run = (amount) =>
    new Promise((resolve, reject) =>
      autocannon({ connections: CONNECTIONS, amount, ...opts }, (err, r) => (err ? reject(err) : resolve(r))),
    );
  await run(Math.min(2000, N)); // warm up: JIT, pool connections, statement caches
  const pids = await backendPids(databaseUrl);
  const dbBefore = pids.reduce((s, p) => s + cpuUs(p), 0);
  const before = cpuUs(pid);
  const result = await run(N);
  const server = (cpuUs(pid) - before) / N;
  const database = pids.length ? (pids.reduce((s, p) => s + cpuUs(p), 0) - dbBefore) / N : undefined;
  return {
    server_cpu_us: Math.round(server),
    db_cpu_us: database === undefined ? undefined : Math.round(database),
    non2xx: result.non2xx,
    rps: Math.round(result.requests.average),
  };
}

async function main() {
  const mode = process.argv[2] ?? 'sqlite';
  const out = {};
  const bare = await startBare(PORT);
  out.bare_get = await measureCost(bare.pid, undefined, { url: `${bare.base}/bare` });
  bare.kill();
  const th = await setupTaskhook({ mode, port: PORT + 1 });
  try {
    out.get = await measureCost(th.pid, th.databaseUrl, { url: th.pollUrl, headers: th.headers });
    out.submit = await measureCost(th.pid, th.databaseUrl, {
      url: th.submitUrl,
      method: 'POST',
      headers: th.headers,
      body: th.submitBody,
    });
    out.webhook = await measureCost(th.pid, th.databaseUrl, {
      url: th.webhookUrl,
      method: 'POST',
      headers: th.webhookHeaders,
      body: th.webhookBody,
    });
  } finally {
    await th.stop();
  }
  console.log(JSON.stringify({ mode, requests: N, connections: CONNECTIONS, ...out }, null, 2));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
