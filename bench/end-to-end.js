// End to end over HTTP with the SDK's worker, and the same shape of work on graphile-worker and
// pg-boss (no-op jobs) on the benchmark's PostgreSQL server.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { freshPgDatabase, root } from './servers.js';

const versionOf = (pkg) =>
  JSON.parse(readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;

/** Runs `total` jobs split over `clients` concurrent loops of `send(i)`. */
async function submitAll(total, clients, send) {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) await send(next++);
    }),
  );
}

/**
 * `tasks` tasks submitted over HTTP by `clients` concurrent clients and drained by `workers` SDK
 * workers (runWorker, `claim` tasks per claim), each completed: tasks/s from the first submit
 * to the last completion.
 */
export async function runEndToEnd(th, { tasks, clients, workers, claim }) {
  const { runWorker } = await import('@taskhook/sdk');
  const agent = await (
    await fetch(`${th.base}/agent`, {
      method: 'POST',
      headers: th.headers,
      body: JSON.stringify({ name: 'end-to-end', concurrency: workers * claim }),
    })
  ).json();
  let handled = 0;
  let allHandled;
  const finished = new Promise((r) => {
    allHandled = r;
  });
  const started = performance.now();
  const running = Array.from({ length: workers }, (_, i) =>
    runWorker({
      baseUrl: th.base,
      apiKey: th.key,
      agentId: agent.uuid,
      concurrency: claim,
      waitSeconds: 5,
      handleSignals: false,
      workerId: `bench-${i}`,
      log: () => undefined,
      handler: async () => {
        if (++handled === tasks) allHandled();
        return { summary: 'ok' };
      },
    }),
  );
  let refused = 0;
  // The submitters are the load generator, sharing the cores with the server: undici's request
  // costs them ~80 µs of CPU per call here, Node's fetch ~400 µs (docs/benchmarks.md).
  await submitAll(tasks, clients, async () => {
    const res = await request(`${th.base}/agent/request/${agent.uuid}`, {
      method: 'POST',
      headers: th.headers,
      body: th.submitBody,
    });
    if (res.statusCode !== 202) refused++;
    await res.body.arrayBuffer();
  });
  if (refused) throw new Error(`end to end: ${refused} submits refused`);
  await finished;
  // stop() lets running handlers finish, so their completes are sent and answered.
  await Promise.all(running.map((w) => w.stop()));
  const seconds = (performance.now() - started) / 1000;
  return {
    tasks,
    clients,
    workers,
    claim,
    seconds: +seconds.toFixed(2),
    tasks_per_second: Math.round(tasks / seconds),
  };
}

async function graphileWorker(jobs, clients) {
  const { run, makeWorkerUtils } = await import('graphile-worker');
  const connectionString = await freshPgDatabase('taskhook_bench_graphile');
  const utils = await makeWorkerUtils({ connectionString });
  await utils.migrate();
  let done = 0;
  let allDone;
  const finished = new Promise((r) => {
    allDone = r;
  });
  const runner = await run({
    connectionString,
    concurrency: 32,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new (await import('graphile-worker')).Logger(() => () => undefined),
    taskList: {
      noop: async () => {
        if (++done === jobs) allDone();
      },
    },
  });
  const started = performance.now();
  await submitAll(jobs, clients, (i) => utils.addJob('noop', { i }));
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await runner.stop();
  await utils.release();
  return {
    version: versionOf('graphile-worker'),
    jobs,
    seconds: +seconds.toFixed(2),
    jobs_per_second: Math.round(jobs / seconds),
  };
}

async function pgBoss(jobs, clients) {
  const mod = await import('pg-boss');
  const PgBoss = mod.PgBoss ?? mod.default;
  const connectionString = await freshPgDatabase('taskhook_bench_pgboss');
  const boss = new PgBoss({ connectionString, max: 10 });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue('noop');
  let done = 0;
  let allDone;
  const finished = new Promise((r) => {
    allDone = r;
  });
  for (let w = 0; w < 4; w++) {
    await boss.work('noop', { batchSize: 50, pollingIntervalSeconds: 0.5 }, async (batch) => {
      done += batch.length;
      if (done >= jobs) allDone();
    });
  }
  const started = performance.now();
  await submitAll(jobs, clients, (i) => boss.send('noop', { i }));
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await boss.stop({ graceful: false, wait: false });
  return {
    version: versionOf('pg-boss'),
    jobs,
    seconds: +seconds.toFixed(2),
    jobs_per_second: Math.round(jobs / seconds),
  };
}

/** graphile-worker and pg-boss draining `jobs` no-op jobs added by `clients` concurrent clients. */
export async function runPeers({ jobs, clients }) {
  const peers = {};
  for (const [name, fn] of [
    ['graphile-worker', graphileWorker],
    ['pg-boss', pgBoss],
  ]) {
    try {
      peers[name] = await fn(jobs, clients);
    } catch (err) {
      peers[name] = { error: String(err?.message ?? err) };
    }
  }
  return peers;
}
