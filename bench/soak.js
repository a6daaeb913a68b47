// npm run soak [-- --minutes 30 --database sqlite|postgres]: mixed traffic against a real
// `taskhook serve` process (submits, polls, SSE streams, workers, webhooks, callbacks) while the
// server's RSS, JS heap, open file descriptors and event-loop lag are sampled every 10 s into
// bench/results/soak.csv and plotted in bench/results/soak.png. After the warm-up, RSS must grow
// less than 10 % and the open descriptors must not grow. Not part of CI. See docs/benchmarks.md.
// Needs `npm run build` first (it runs dist/cli/index.js, as production does).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { root, setupTaskhook, sleep } from './servers.js';
import { writePlot } from './soak-plot.js';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    database: { type: 'string', default: 'sqlite' },
    'warmup-minutes': { type: 'string' },
    port: { type: 'string', default: '18970' },
    'sample-seconds': { type: 'string', default: '10' },
  },
});
const MINUTES = Number(args.minutes);
const WARMUP_S = Number(args['warmup-minutes'] ?? Math.min(5, MINUTES / 3)) * 60;
const SAMPLE_MS = Number(args['sample-seconds']) * 1000;
const RESULTS = path.join(root, 'bench/results');
const log = (msg) => console.error(`[soak] ${new Date().toISOString()} ${msg}`);

// --- a callback receiver (answers 200; every 20th call 503, so retries happen too) -------------
let callbacks = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    callbacks++;
    res.writeHead(callbacks % 20 === 0 ? 503 : 200).end();
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const callbackUrl = `http://127.0.0.1:${receiver.address().port}/hook`;

const server = await setupTaskhook({
  mode: args.database,
  port: Number(args.port),
  extraEnv: {
    TASKHOOK_METRICS: 'true',
    TASKHOOK_ALLOW_PRIVATE_URLS: 'true',
    TASKHOOK_CALLBACK_RETRY_SCHEDULE: '2,5',
  },
});
log(`server pid ${server.pid} on ${server.base} (${args.database}), ${MINUTES} min, warm-up ${WARMUP_S / 60} min`);

// --- traffic ----------------------------------------------------------------------------------
const counts = { requests: 0, errors5xx: 0, failures: 0 };
let running = true;
const recent = [];
const remember = (taskId) => {
  recent.push(taskId);
  if (recent.length > 200) recent.shift();
};
const pick = () => recent[Math.floor(Math.random() * recent.length)];
const agentUrl = `${server.base}/agent/${server.agent.uuid}`;

async function request(url, init = {}) {
  counts.requests++;
  try {
    const res = await fetch(url, { ...init, headers: { ...server.headers, ...init.headers } });
    if (res.status >= 500) counts.errors5xx++;
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } catch (err) {
    counts.failures++;
    return { status: 0, body: null, err };
  }
}
const post = (url, body, headers) => request(url, { method: 'POST', body: JSON.stringify(body), headers });

/** Runs `step` again and again with `pauseMs` between runs until the end. */
async function loop(pauseMs, step) {
  while (running) {
    await step();
    await sleep(pauseMs);
  }
}

const submitter = loop(40, async () => {
  const webhook = Math.random() < 0.3;
  const res = await post(server.submitUrl, {
    message: `soak task ${counts.requests}`,
    priority: 1 + Math.floor(Math.random() * 10),
    ...(webhook ? { callback_mode: 'webhook', webhook_url: callbackUrl } : {}),
  });
  if (res.status === 202) remember(res.body.task_id);
});

const worker = () =>
  loop(5, async () => {
    const claim = await post(`${agentUrl}/tasks/claim`, { max_tasks: 5, wait_seconds: 2, lease_seconds: 30 });
    for (const task of claim.body?.tasks ?? []) {
      const at = `${agentUrl}/task/${task.task_id}`;
      await post(`${at}/progress`, {
        lease_id: task.lease_id,
        current_step: 'reading',
        steps_completed: 1,
        total_steps: 2,
      });
      const roll = Math.random();
      if (roll < 0.1 && task.messages.length < 3) {
        await post(`${at}/input_request`, { lease_id: task.lease_id, message: 'which branch?' });
        await post(`${at}/message`, { message: 'main' });
      } else if (roll < 0.2) {
        await post(`${at}/fail`, { lease_id: task.lease_id, error: { message: 'flaky' }, retryable: true });
      } else {
        await post(`${at}/complete`, { lease_id: task.lease_id, result: { summary: 'ok', findings: [] } });
      }
    }
  });

const poller = loop(20, async () => {
  if (recent.length) await request(`${agentUrl}/task/${pick()}`);
  if (Math.random() < 0.05) await request(`${agentUrl}/tasks?limit=20`);
});

const webhooks = loop(100, async () => {
  counts.requests++;
  const good = Math.random() < 0.8;
  try {
    const res = await fetch(server.webhookUrl, {
      method: 'POST',
      headers: good ? server.webhookHeaders : { 'content-type': 'application/json', 'x-webhook-secret': 'whs_wrong' },
      body: server.webhookBody,
    });
    if (res.status >= 500) counts.errors5xx++;
    const body = await res.json();
    if (res.status === 202) remember(body.task_id);
  } catch {
    counts.failures++;
  }
});

/** An SSE stream on a recent task, read until the server ends it (the task finished) or 60 s. */
async function stream() {
  const taskId = pick();
  if (!taskId) return sleep(200);
  counts.requests++;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 60_000);
  try {
    const res = await fetch(`${agentUrl}/task/${taskId}/events`, {
      headers: server.headers,
      signal: controller.signal,
    });
    if (res.status >= 500) counts.errors5xx++;
    for await (const _chunk of res.body ?? []) if (!running) break;
  } catch (err) {
    if (err.name !== 'AbortError') counts.failures++;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
const streams = Array.from({ length: 8 }, () => loop(50, stream));
const workers = Array.from({ length: 4 }, worker);

// --- sampling ---------------------------------------------------------------------------------
function metric(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}

function processFacts(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
  return { rss_mb: rssKb / 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

const samples = [];
const started = Date.now();
async function sample() {
  const res = await fetch(`${server.base}/metrics`);
  const text = await res.text();
  const facts = processFacts(server.pid);
  const row = {
    t_s: Math.round((Date.now() - started) / 1000),
    rss_mb: Number(facts.rss_mb.toFixed(1)),
    heap_mb: Number((metric(text, 'taskhook_nodejs_heap_size_used_bytes') / 2 ** 20).toFixed(1)),
    fds: facts.fds,
    lag_p99_ms: Number((metric(text, 'taskhook_nodejs_eventloop_lag_p99_seconds') * 1000).toFixed(1)),
    requests: counts.requests,
    errors_5xx: counts.errors5xx,
    client_failures: counts.failures,
    callbacks,
  };
  samples.push(row);
  log(
    `t=${row.t_s}s rss=${row.rss_mb} MiB heap=${row.heap_mb} MiB fds=${row.fds} lag p99=${row.lag_p99_ms} ms requests=${row.requests} 5xx=${row.errors_5xx}`,
  );
}

// One scrape first: the event-loop figures cover the time since the previous scrape, and the
// first would cover the server's start.
await fetch(`${server.base}/metrics`).then((res) => res.text());
await sample();
const end = started + MINUTES * 60_000;
while (Date.now() < end) {
  await sleep(Math.min(SAMPLE_MS, end - Date.now()));
  await sample();
}
running = false;
await Promise.all([submitter, poller, webhooks, ...workers, ...streams]);

// --- results ----------------------------------------------------------------------------------
mkdirSync(RESULTS, { recursive: true });
const columns = Object.keys(samples[0]);
writeFileSync(
  path.join(RESULTS, 'soak.csv'),
  `${columns.join(',')}\n${samples.map((s) => columns.map((c) => s[c]).join(',')).join('\n')}\n`,
);
const title = `taskhook soak: ${MINUTES} min on ${args.database}, ${counts.requests} requests (shaded: warm-up)`;
await writePlot(
  samples,
  { title, warmupSeconds: WARMUP_S },
  path.join(RESULTS, 'soak.svg'),
  path.join(RESULTS, 'soak.png'),
);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const after = samples.filter((s) => s.t_s >= WARMUP_S);
const edge = Math.max(1, Math.min(3, Math.floor(after.length / 3)));
const first = after.slice(0, edge);
const last = after.slice(-edge);
const rssGrowth = median(last.map((s) => s.rss_mb)) / median(first.map((s) => s.rss_mb)) - 1;
const fdGrowth = median(last.map((s) => s.fds)) - median(first.map((s) => s.fds));
// Descriptors follow the open connections of the moment (8 streams, 4 long polls, keep-alive
// sockets, database connections); a leak shows as a steady climb, so a few either way is noise.
const FD_SLACK = 4;
const checks = {
  rss_growth_after_warmup: `${(rssGrowth * 100).toFixed(1)} %`,
  rss_ok: rssGrowth < 0.1,
  fd_growth_after_warmup: fdGrowth,
  fds_ok: fdGrowth <= FD_SLACK,
  errors_5xx: counts.errors5xx,
  no_5xx: counts.errors5xx === 0,
};
console.log(
  JSON.stringify({ minutes: MINUTES, database: args.database, requests: counts.requests, callbacks, checks }, null, 2),
);

await server.stop();
receiver.close();
process.exit(checks.rss_ok && checks.fds_ok && checks.no_5xx ? 0 : 1);
