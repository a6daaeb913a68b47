// node bench/login-flood.js [sqlite|postgres] (after npm run build; not run in CI): how a submit
// fares while 200 wrong-password logins are in flight on the same instance. First submits alone
// (the baseline), then the same submits while LOGIN_FLOOD_CONCURRENCY (200) clients each send
// wrong-password logins back to back. The submits during the flood start with it (its first
// second is where a stall showed, issue 22). Prints submit p50/p99 and the worst submit, and the
// logins' statuses.
// Settings: LOGIN_FLOOD_SUBMITS (200 per phase), LOGIN_FLOOD_CONCURRENCY (200), BENCH_PORT (18995),
// LOGIN_FLOOD_CPU_PROF (a directory: the server runs with --cpu-prof and writes its profile there),
// BENCH_PG_URL as for npm run bench.
import { cpus, loadavg } from 'node:os';
import { setupTaskhook } from './servers.js';

const MODE = process.argv[2] ?? 'sqlite';
const SUBMITS = Number(process.env.LOGIN_FLOOD_SUBMITS ?? 200);
const FLOOD = Number(process.env.LOGIN_FLOOD_CONCURRENCY ?? 200);
const PORT = Number(process.env.BENCH_PORT ?? 18995);

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Sends SUBMITS submits one after another; answers their latencies in ms, sorted. */
async function submits(th) {
  const times = [];
  for (let i = 0; i < SUBMITS; i++) {
    const started = performance.now();
    const res = await fetch(th.submitUrl, { method: 'POST', headers: th.headers, body: th.submitBody });
    await res.arrayBuffer();
    if (res.status !== 202) throw new Error(`submit answered ${res.status}`);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

function summary(times) {
  const r = (x) => Math.round(x * 10) / 10;
  return { p50_ms: r(pct(times, 0.5)), p99_ms: r(pct(times, 0.99)), worst_ms: r(times.at(-1)) };
}

async function main() {
  const prof = process.env.LOGIN_FLOOD_CPU_PROF;
  const nodeArgs = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  const th = await setupTaskhook({ mode: MODE, port: PORT, nodeArgs });
  try {
    await submits(th); // warm up
    const alone = summary(await submits(th));

    const statuses = {};
    let flooding = true;
    let logins = 0;
    const body = JSON.stringify({ email: 'nobody@example.test', password: 'wrong-password-123' });
    const client = async () => {
      while (flooding) {
        const res = await fetch(`${th.base}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).catch(() => null);
        const status = res ? res.status : 'error';
        await res?.arrayBuffer();
        statuses[status] = (statuses[status] ?? 0) + 1;
        logins++;
      }
    };
    const started = performance.now();
    const clients = Array.from({ length: FLOOD }, client);
    // Measured from the flood's first request: its start is when the event loop stalled.
    const during = summary(await submits(th));
    flooding = false;
    await Promise.all(clients);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      JSON.stringify(
        {
          mode: MODE,
          cores: cpus().length,
          load_average: loadavg().map((x) => Math.round(x * 10) / 10),
          thread_pool: process.env.UV_THREADPOOL_SIZE ?? 'default',
          submits_per_phase: SUBMITS,
          flood_clients: FLOOD,
          submit_alone: alone,
          submit_during_flood: during,
          logins_per_s: Math.round(logins / seconds),
          login_statuses: statuses,
        },
        null,
        2,
      ),
    );
  } finally {
    await th.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
