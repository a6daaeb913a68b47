// node bench/profile.js sqlite|postgres get|submit|webhook|end-to-end [seconds, or thousands of
// tasks for end-to-end]: runs one kind of request against a server started with --cpu-prof and
// prints where its CPU time went (self time by function and by source file). For finding what to
// optimise; see docs/benchmarks.md.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { runEndToEnd } from './end-to-end.js';
import { cpuUs, setupTaskhook } from './servers.js';

const [mode = 'sqlite', kind = 'get', seconds = '5'] = process.argv.slice(2);
const dir = mkdtempSync(path.join(tmpdir(), 'taskhook-prof-'));
const th = await setupTaskhook({
  mode,
  port: Number(process.env.PROFILE_PORT ?? 18985),
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
});
if (kind === 'end-to-end') {
  // The benchmark's end-to-end run (`seconds` is then thousands of tasks), with the server's CPU per task.
  const before = cpuUs(th.pid);
  const r = await runEndToEnd(th, { tasks: Number(seconds) * 1000, clients: 32, workers: 4, claim: 50 });
  const perTask = Math.round((cpuUs(th.pid) - before) / r.tasks);
  console.log(`end to end on ${mode}: ${r.tasks_per_second} tasks/s, server CPU ${perTask} µs per task`);
} else {
  const opts = {
    get: { url: th.pollUrl, headers: th.headers },
    submit: { url: th.submitUrl, method: 'POST', headers: th.headers, body: th.submitBody },
    webhook: { url: th.webhookUrl, method: 'POST', headers: th.webhookHeaders, body: th.webhookBody },
  }[kind];
  const r = await autocannon({ ...opts, duration: Number(seconds), connections: 32 });
  console.log(`${kind} on ${mode}: ${Math.round(r.requests.average)} req/s, non2xx ${r.non2xx}`);
}
await th.stop();

// The server's profile is the largest one written (the CLI calls write small ones too).
const files = readdirSync(dir).map((f) => path.join(dir, f));
const file = files.sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const selfUs = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const id = prof.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const fn = new Map();
const files2 = new Map();
for (const [id, us] of selfUs) {
  const { callFrame: c } = byId.get(id);
  const where = c.url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, 'nm:')
    .replace(/.*\/dist\//, 'dist:');
  const k = `${c.functionName || '(anon)'} ${where}:${c.lineNumber + 1}`;
  fn.set(k, (fn.get(k) ?? 0) + us);
  const f = where.startsWith('nm:')
    ? where
        .split('/')
        .slice(0, where.startsWith('nm:@') ? 2 : 1)
        .join('/')
    : where || c.functionName;
  files2.set(f, (files2.get(f) ?? 0) + us);
}
const top = (m, n) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
console.log(`\nself time by function (${(total / 1e6).toFixed(1)} s sampled)`);
console.log(top(fn, Number(process.env.TOP ?? 45)).join('\n'));
console.log('\nself time by file / package');
console.log(top(files2, Number(process.env.TOP ?? 30)).join('\n'));
rmSync(dir, { recursive: true, force: true });
