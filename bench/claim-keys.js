// node bench/claim-keys.js [sqlite|postgres] (npm run bench:keys; after npm run build; not run in CI):
// what fair claiming costs. Two agents of one server each get KEYS_TASKS queued tasks (10,000):
// one without keys (today's claim), one spread over KEYS_GROUPS keys (1,000), so every hand-out
// picks the key group served least recently. A worker then claims one task at a time and completes
// it, KEYS_CLAIMS times (2,000) per agent; printed: claim-and-complete rounds per second and the
// claim's p50/p99 over HTTP. BENCH_PORT (18994), BENCH_PG_URL
// as for npm run bench.
import { setupTaskhook } from './servers.js';

const MODE = process.argv[2] ?? 'sqlite';
const TASKS = Number(process.env.KEYS_TASKS ?? 10_000);
const GROUPS = Number(process.env.KEYS_GROUPS ?? 1000);
const CLAIMS = Number(process.env.KEYS_CLAIMS ?? 2000);
const PORT = Number(process.env.BENCH_PORT ?? 18994);

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const r = (x) => Math.round(x * 100) / 100;

async function post(url, headers, body) {
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Queues `TASKS` tasks, 50 requests at a time; `keyOf(i)` is the i-th task's key (or undefined). */
async function fill(th, agentUuid, keyOf) {
  let next = 0;
  const lane = async () => {
    while (next < TASKS) {
      const i = next++;
      const key = keyOf(i);
      await post(`${th.base}/agent/request/${agentUuid}`, th.headers, {
        message: `task ${i}`,
        ...(key === undefined ? {} : { concurrency_key: key }),
      });
    }
  };
  await Promise.all(Array.from({ length: 50 }, lane));
}

/** Claims one task at a time and completes it, CLAIMS times; the claim alone is timed. */
async function drain(th, agentUuid) {
  const times = [];
  const started = performance.now();
  for (let i = 0; i < CLAIMS; i++) {
    const t0 = performance.now();
    const { tasks } = await post(`${th.base}/agent/${agentUuid}/tasks/claim`, th.headers, { max_tasks: 1 });
    times.push(performance.now() - t0);
    const [task] = tasks;
    if (!task) throw new Error(`the queue ran dry after ${i} claims`);
    await post(`${th.base}/agent/${agentUuid}/task/${task.task_id}/complete`, th.headers, {
      lease_id: task.lease_id,
      result: { summary: 'ok', findings: [] },
    });
  }
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return {
    claims_per_s: Math.round(CLAIMS / seconds),
    claim_p50_ms: r(pct(times, 0.5)),
    claim_p99_ms: r(pct(times, 0.99)),
  };
}

const th = await setupTaskhook({ mode: MODE, port: PORT });
try {
  const keyless = await post(`${th.base}/agent`, th.headers, { name: 'keyless', concurrency: 1000 });
  const keyed = await post(`${th.base}/agent`, th.headers, { name: 'keyed', concurrency: 1000 });
  console.error(`[keys] queueing ${TASKS} keyless and ${TASKS} tasks over ${GROUPS} keys on ${MODE}`);
  await fill(th, keyless.uuid, () => undefined);
  await fill(th, keyed.uuid, (i) => `customer-${i % GROUPS}`);
  const results = {
    mode: MODE,
    queued: TASKS,
    keys: GROUPS,
    claims: CLAIMS,
    keyless: await drain(th, keyless.uuid),
    keyed: await drain(th, keyed.uuid),
  };
  results.keyed_vs_keyless = r(results.keyed.claims_per_s / results.keyless.claims_per_s);
  console.log(JSON.stringify(results, null, 2));
} finally {
  await th.stop();
}
