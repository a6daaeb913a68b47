// npm run bench [-- --quick]: taskhook on SQLite and on PostgreSQL against a bare Fastify route
// (the ceiling) and against graphile-worker and pg-boss on the same PostgreSQL, in one run.
// Prints a table and writes bench/results/latest.json. See docs/benchmarks.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { runEndToEnd, runPeers } from './end-to-end.js';
import { cpuUs, root, setupTaskhook, sleep, startBare } from './servers.js';

const QUICK = process.argv.includes('--quick');
const DURATION = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const E2E_TASKS = Number(process.env.BENCH_TASKS ?? (QUICK ? 2000 : 10_000));
const DISPATCH_ROUNDS = QUICK ? 40 : 300;
const PORT = Number(process.env.BENCH_PORT ?? 18990);
const MODES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',');

const step = (name) => console.error(`[bench] ${new Date().toISOString()} ${name}`);

function proc(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? 0);
    return {
      cpuUs: cpuUs(pid),
      rssMb: kb('VmRSS') / 1024,
      peakMb: kb('VmHWM') / 1024,
    };
  } catch {
    return { cpuUs: 0, rssMb: 0, peakMb: 0 };
  }
}

/** autocannon for DURATION seconds; also the server's CPU time per request (µs). */
async function cannon(pid, opts) {
  const before = proc(pid).cpuUs;
  const r = await new Promise((resolve, reject) =>
    autocannon({ duration: DURATION, connections: CONNECTIONS, ...opts }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  );
  const requests = r.requests.total || 1;
  return {
    rps: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    cpu_us_per_request: Math.round((proc(pid).cpuUs - before) / requests),
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

async function dispatch(th) {
  const worker = await (
    await fetch(`${th.base}/agent`, { method: 'POST', headers: th.headers, body: JSON.stringify({ name: 'dispatch' }) })
  ).json();
  const fromAck = [];
  for (let i = 0; i < DISPATCH_ROUNDS; i++) {
    const claim = fetch(`${th.base}/agent/${worker.uuid}/tasks/claim`, {
      method: 'POST',
      headers: th.headers,
      body: JSON.stringify({ wait_seconds: 10, max_tasks: 1 }),
    }).then(async (r) => ({ body: await r.json(), at: performance.now() }));
    await sleep(5);
    const ack = await fetch(`${th.base}/agent/request/${worker.uuid}`, {
      method: 'POST',
      headers: th.headers,
      body: th.submitBody,
    }).then(async (r) => ({ body: await r.json(), at: performance.now() }));
    const got = await claim;
    if (got.body.tasks?.[0]?.task_id !== ack.body.task_id)
      throw new Error('dispatch: the claim did not return the task');
    fromAck.push(got.at - ack.at);
    await fetch(`${th.base}/agent/${worker.uuid}/task/${ack.body.task_id}/complete`, {
      method: 'POST',
      headers: th.headers,
      body: JSON.stringify({ lease_id: got.body.tasks[0].lease_id, result: { summary: 'ok' } }),
    });
  }
  const pct = (p) => +[...fromAck].sort((a, b) => a - b)[Math.floor(fromAck.length * p)].toFixed(2);
  return { rounds: DISPATCH_ROUNDS, p50_ms: pct(0.5), p99_ms: pct(0.99) };
}

/** One OTLP/JSON export of `n` spans in one trace, as an instrumented agent's exporter sends it. */
function otlpExport(n) {
  const hex = (len) => Array.from({ length: len }, () => Math.floor(Math.random() * 16).toString(16)).join('');
  const traceId = hex(32);
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId,
    spanId: hex(16),
    name: `llm call ${i}`,
    kind: 3,
    startTimeUnixNano: String(now + BigInt(i) * 1000n),
    endTimeUnixNano: String(now + BigInt(i) * 1000n + 500_000n),
    attributes: [
      { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
      { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
      { key: 'gen_ai.usage.input_tokens', value: { intValue: '120' } },
      { key: 'gen_ai.usage.output_tokens', value: { intValue: '40' } },
    ],
    status: { code: 1 },
  }));
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench-agent' } }] },
        scopeSpans: [{ scope: { name: 'bench' }, spans }],
      },
    ],
  });
}

/**
 * Submit latency on its own and while an agent exports 1,000-span batches back to back over
 * OTLP/HTTP: what telemetry ingest costs the task API on the same instance.
 */
async function submitDuringIngest(th) {
  const submit = { url: th.submitUrl, method: 'POST', headers: th.headers, body: th.submitBody, connections: 10 };
  const alone = await cannon(th.pid, submit);
  let exporting = true;
  let exports = 0;
  const exporter = (async () => {
    while (exporting) {
      const res = await fetch(`${th.base}/telemetry/ingest_http/v1/traces`, {
        method: 'POST',
        headers: { authorization: th.ingestToken, 'content-type': 'application/json' },
        body: otlpExport(1000),
      });
      if (!res.ok) throw new Error(`ingest: ${res.status} ${await res.text()}`);
      exports++;
    }
  })();
  const during = await cannon(th.pid, submit);
  exporting = false;
  await exporter;
  return {
    submit_alone: { rps: alone.rps, p50_ms: alone.p50_ms, p99_ms: alone.p99_ms },
    submit_during_ingest: { rps: during.rps, p50_ms: during.p50_ms, p99_ms: during.p99_ms },
    spans_per_second: Math.round((exports * 1000) / DURATION),
  };
}

async function measureMode(mode, port) {
  step(`taskhook on ${mode}`);
  const th = await setupTaskhook({ mode, port });
  try {
    const out = { database: mode };
    // Resident memory after each phase, and the peak so far: which phase makes the peak.
    const phases = {};
    const mark = (phase) => {
      const m = proc(th.pid);
      phases[phase] = { rss_mb: Math.round(m.rssMb), peak_rss_mb: Math.round(m.peakMb) };
    };
    mark('started');
    out.get = await cannon(th.pid, { url: th.pollUrl, headers: th.headers });
    mark('get');
    out.submit = await cannon(th.pid, { url: th.submitUrl, method: 'POST', headers: th.headers, body: th.submitBody });
    mark('submit');
    out.webhook = await cannon(th.pid, {
      url: th.webhookUrl,
      method: 'POST',
      headers: th.webhookHeaders,
      body: th.webhookBody,
    });
    mark('webhook');
    step(`submit during telemetry ingest on ${mode}`);
    out.telemetry = await submitDuringIngest(th);
    mark('telemetry');
    step(`end to end on ${mode}`);
    out.end_to_end = await runEndToEnd(th, { tasks: E2E_TASKS, clients: 32, workers: 4, claim: 50 });
    mark('end to end');
    step(`dispatch on ${mode}`);
    out.dispatch = await dispatch(th);
    mark('dispatch');
    const mem = proc(th.pid);
    out.memory = { rss_mb: Math.round(mem.rssMb), peak_rss_mb: Math.round(mem.peakMb), phases };
    return out;
  } finally {
    await th.stop();
  }
}

const ratio = (a, b) => (a && b ? +(a / b).toFixed(3) : null);

function table(results) {
  const rows = [['figure', ...results.modes.map((m) => m.database)]];
  const ceiling = results.ceiling.get.rps;
  rows.push([
    'ceiling: bare GET req/s (CPU µs/req)',
    ...results.modes.map(() => `${ceiling} (${results.ceiling.get.cpu_us_per_request})`),
  ]);
  for (const [key, label] of [
    ['get', 'GET task status'],
    ['submit', 'submit (platform key, durable)'],
    ['webhook', 'webhook receive'],
  ]) {
    rows.push([
      `${label} req/s (×ceiling, CPU µs/req)`,
      ...results.modes.map((m) => `${m[key].rps} (${ratio(m[key].rps, ceiling)}×, ${m[key].cpu_us_per_request})`),
    ]);
  }
  rows.push([
    'submit p50 / p99 ms, alone → during 1,000-span exports',
    ...results.modes.map((m) => {
      const { submit_alone: a, submit_during_ingest: d } = m.telemetry;
      return `${a.p50_ms} / ${a.p99_ms} → ${d.p50_ms} / ${d.p99_ms}`;
    }),
  ]);
  rows.push(['spans ingested/s meanwhile', ...results.modes.map((m) => String(m.telemetry.spans_per_second))]);
  rows.push(['end to end tasks/s', ...results.modes.map((m) => String(m.end_to_end.tasks_per_second))]);
  for (const peer of Object.keys(results.peers)) {
    rows.push([
      `${peer} no-op jobs/s`,
      ...results.modes.map(() => String(results.peers[peer].jobs_per_second ?? results.peers[peer].error)),
    ]);
  }
  rows.push(['dispatch p50 / p99 ms', ...results.modes.map((m) => `${m.dispatch.p50_ms} / ${m.dispatch.p99_ms}`)]);
  rows.push(['server RSS now / peak MB', ...results.modes.map((m) => `${m.memory.rss_mb} / ${m.memory.peak_rss_mb}`)]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

async function main() {
  const started = Date.now();
  const results = {
    date: new Date().toISOString(),
    quick: QUICK,
    machine: { cpus: cpus().length, model: cpus()[0]?.model, memory_gb: Math.round(totalmem() / 2 ** 30) },
    node: process.version,
    settings: { duration_s: DURATION, connections: CONNECTIONS, end_to_end_tasks: E2E_TASKS },
  };
  step('ceiling');
  const bare = await startBare(PORT);
  results.ceiling = { get: await cannon(bare.pid, { url: `${bare.base}/bare` }) };
  bare.kill();
  results.modes = [];
  for (const [i, mode] of MODES.entries()) results.modes.push(await measureMode(mode, PORT + 1 + i));
  step('peers');
  results.peers = MODES.includes('postgres') ? await runPeers({ jobs: E2E_TASKS, clients: 32 }) : {};
  results.ratios = Object.fromEntries(
    results.modes.map((m) => [
      m.database,
      {
        get_vs_ceiling: ratio(m.get.rps, results.ceiling.get.rps),
        submit_vs_ceiling: ratio(m.submit.rps, results.ceiling.get.rps),
        webhook_vs_ceiling: ratio(m.webhook.rps, results.ceiling.get.rps),
        end_to_end_vs_graphile_worker: ratio(
          m.end_to_end.tasks_per_second,
          results.peers['graphile-worker']?.jobs_per_second,
        ),
      },
    ]),
  );
  results.seconds = Math.round((Date.now() - started) / 1000);
  const dir = path.join(root, 'bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log(table(results));
  console.log(`\nratios: ${JSON.stringify(results.ratios)}`);
  console.log(`${results.seconds} s; written to bench/results/latest.json`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
