// node bench/burst.js [sqlite|postgres]: one account's burst of simultaneous submits, and another
// account's submit sent in the same instant. Prints how long the quiet submit took in each round
// and how long the burst took as a whole. Not part of `npm run bench`; run it on an idle machine.
// TASKHOOK_SUBMITS_PER_ACCOUNT=10000 (passed through to the server) turns the per-account submit
// lanes off in effect, for a comparison.
import { cliJson, post, setupTaskhook, sleep } from './servers.js';

const MODE = process.argv[2] ?? 'sqlite';
const BURST = Number(process.env.BURST_SUBMITS ?? 1000);
const ROUNDS = Number(process.env.BURST_ROUNDS ?? 7);
const PORT = Number(process.env.BENCH_PORT ?? 18997);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const th = await setupTaskhook({ mode: MODE, port: PORT });
  try {
    const email = `quiet-${Date.now()}@example.test`;
    cliJson(['user', 'create', '--email', email, '--password', 'benchmark-password', '--verified'], th.env);
    const { key } = cliJson(['key', 'create', '--email', email, '--name', 'quiet'], th.env);
    const quietHeaders = { 'x-api-key': key, 'content-type': 'application/json' };
    const quietAgent = await post(`${th.base}/agent`, quietHeaders, { name: 'quiet' });
    const body = JSON.parse(th.submitBody);
    const quietUrl = `${th.base}/agent/request/${quietAgent.uuid}`;
    // Warm both paths.
    await post(quietUrl, quietHeaders, body);
    await Promise.all(Array.from({ length: 50 }, () => post(th.submitUrl, th.headers, body)));

    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      const burst = Array.from({ length: BURST }, () => post(th.submitUrl, th.headers, body));
      const quiet = post(quietUrl, quietHeaders, body).then(() => performance.now() - started);
      const quietMs = await quiet;
      await Promise.all(burst);
      rounds.push({
        quiet_submit_ms: Math.round(quietMs * 10) / 10,
        burst_ms: Math.round(performance.now() - started),
      });
      await sleep(1000);
    }
    console.log(
      JSON.stringify(
        {
          mode: MODE,
          submits_per_account: process.env.TASKHOOK_SUBMITS_PER_ACCOUNT ?? 'default (100)',
          burst: BURST,
          quiet_submit_median_ms: median(rounds.map((r) => r.quiet_submit_ms)),
          quiet_submit_worst_ms: Math.max(...rounds.map((r) => r.quiet_submit_ms)),
          burst_median_ms: median(rounds.map((r) => r.burst_ms)),
          rounds,
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
