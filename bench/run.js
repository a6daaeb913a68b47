// npm run bench: taskhook side by side with a bare Fastify route, on this machine, in one run.
// Servers run in child processes; autocannon drives them from this process over loopback.
import { execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist/cli/index.js');
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const PILE = Number(process.env.BENCH_PILE ?? 50_000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const step = (name) => console.error(`[bench] ${new Date().toISOString()} ${name}`);

async function waitHttp(url) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await sleep(100);
  }
  throw new Error(`${url} did not come up`);
}

function cannon(opts) {
  return new Promise((resolve, reject) => {
    autocannon({ duration: DURATION, connections: CONNECTIONS, ...opts }, (err, result) =>
      err ? reject(err) : resolve(result),
    );
  });
}

const summary = (r) => ({
  rps: Math.round(r.requests.average),
  p50_ms: r.latency.p50,
  p99_ms: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
});

async function startTaskhook(env) {
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitHttp(`http://127.0.0.1:${env.PORT}/health`);
  return child;
}

function cliJson(args, env) {
  return JSON.parse(execFileSync(process.execPath, [cli, ...args], { env: { ...process.env, ...env } }).toString());
}

async function main() {
  const results = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model, memory_gb: Math.round(totalmem() / 2 ** 30) },
  };
  results.node = process.version;
  results.settings = { duration_s: DURATION, connections: CONNECTIONS, pile: PILE };

  step('bare');
  // 1. The bare Fastify baseline.
  const bare = fork(path.join(root, 'bench/bare-server.js'), { env: { ...process.env, PORT: '18990' } });
  await new Promise((r) => bare.once('message', r));
  results.bare_get = summary(await cannon({ url: 'http://127.0.0.1:18990/bare' }));
  results.bare_post = summary(
    await cannon({
      url: 'http://127.0.0.1:18990/bare',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'review this diff please', priority: 5 }),
    }),
  );
  bare.kill();

  step('taskhook');
  // 2. taskhook on the embedded default: SQLite, power-loss durable commits (synchronous=full).
  const dataDir = mkdtempSync(path.join(tmpdir(), 'taskhook-bench-'));
  const env = {
    PORT: '18991',
    HOST: '127.0.0.1',
    TASKHOOK_DATA_DIR: dataDir,
    TASKHOOK_LOG_LEVEL: 'warn',
    TASKHOOK_RATE_LIMIT: '1000000000',
    TASKHOOK_SQLITE_SYNCHRONOUS: 'full',
    ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
  };
  const email = `bench-${Date.now()}@example.test`;
  cliJson(['user', 'create', '--email', email, '--password', 'benchmark-password', '--verified'], env);
  const { key } = cliJson(['key', 'create', '--email', email, '--name', 'bench'], env);
  const server = await startTaskhook(env);
  const base = 'http://127.0.0.1:18991';
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const agent = await (
    await fetch(`${base}/agent`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'bench', concurrency: 1000 }),
    })
  ).json();
  const submitBody = JSON.stringify({ message: 'review this diff please', priority: 5 });
  const first = await (
    await fetch(`${base}/agent/request/${agent.uuid}`, { method: 'POST', headers, body: submitBody })
  ).json();

  results.status_get = summary(await cannon({ url: first.poll_url.replace('http://localhost:18991', base), headers }));
  results.submit = summary(
    await cannon({ url: `${base}/agent/request/${agent.uuid}`, method: 'POST', headers, body: submitBody }),
  );

  step('dispatch');
  // 3. Dispatch latency: a worker long-polls; measure submit-acknowledged → claim-returned.
  const fromSend = [];
  const fromAck = [];
  const worker = await (
    await fetch(`${base}/agent`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'dispatch', concurrency: 1000 }),
    })
  ).json();
  for (let i = 0; i < 300; i++) {
    const claim = fetch(`${base}/agent/${worker.uuid}/tasks/claim`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ wait_seconds: 10, max_tasks: 1 }),
    }).then(async (r) => ({ body: await r.json(), at: performance.now() }));
    await sleep(3);
    const sent = performance.now();
    const ack = await fetch(`${base}/agent/request/${worker.uuid}`, { method: 'POST', headers, body: submitBody }).then(
      async (r) => ({ body: await r.json(), at: performance.now() }),
    );
    const got = await claim;
    if (got.body.tasks?.[0]?.task_id !== ack.body.task_id)
      throw new Error('dispatch: the claim did not return the task');
    fromSend.push(got.at - sent);
    fromAck.push(got.at - ack.at);
  }
  const pct = (xs, p) => +[...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)].toFixed(2);
  results.dispatch_ms = {
    note: 'a worker long-polls; the client submits. send→claimed: from sending the submit to the claim answer arriving (includes the submit and the claim, each committed durably); ack→claimed: from the 202 arriving to the claim answer arriving (negative when the claim answer arrives first)',
    send_to_claimed_p50: pct(fromSend, 0.5),
    send_to_claimed_p99: pct(fromSend, 0.99),
    ack_to_claimed_p50: pct(fromAck, 0.5),
    ack_to_claimed_p99: pct(fromAck, 0.99),
  };

  // 4. Batch claims: drain what the submit benchmark queued, 100 at a time.
  const drainStart = performance.now();
  let drained = 0;
  for (;;) {
    const r = await (
      await fetch(`${base}/agent/${agent.uuid}/tasks/claim`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ max_tasks: 100 }),
      })
    ).json();
    if (r.tasks.length === 0) break;
    drained += r.tasks.length;
    await Promise.all(
      r.tasks.map((t) =>
        fetch(`${base}/agent/${agent.uuid}/task/${t.task_id}/complete`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ lease_id: t.lease_id, result: { summary: 'ok', findings: [] } }),
        }),
      ),
    );
    if (drained >= 20_000) break;
  }
  results.claim_complete = {
    tasks: drained,
    per_second: Math.round(drained / ((performance.now() - drainStart) / 1000)),
  };

  step('pile');
  // 5. Flat cost: pile up tasks on another agent, then measure again.
  const pileAgent = await (
    await fetch(`${base}/agent`, { method: 'POST', headers, body: JSON.stringify({ name: 'pile', concurrency: 10 }) })
  ).json();
  await cannon({
    url: `${base}/agent/request/${pileAgent.uuid}`,
    method: 'POST',
    headers,
    body: submitBody,
    amount: PILE,
  });
  const piled = await (await fetch(`${base}/agent/${pileAgent.uuid}/tasks?limit=1`, { headers })).json();
  results.pile = { queued_tasks: piled.pagination.total };
  results.status_get_piled = summary(
    await cannon({ url: first.poll_url.replace('http://localhost:18991', base), headers }),
  );
  results.submit_piled = summary(
    await cannon({ url: `${base}/agent/request/${pileAgent.uuid}`, method: 'POST', headers, body: submitBody }),
  );
  server.kill('SIGTERM');

  results.ratios = {
    status_get_vs_bare_get: +(results.status_get.rps / results.bare_get.rps).toFixed(3),
    submit_vs_bare_post: +(results.submit.rps / results.bare_post.rps).toFixed(3),
    status_get_piled_vs_empty: +(results.status_get_piled.rps / results.status_get.rps).toFixed(3),
    submit_piled_vs_empty: +(results.submit_piled.rps / results.submit.rps).toFixed(3),
  };
  const out = JSON.stringify(results, null, 2);
  console.log(out);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${out}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
