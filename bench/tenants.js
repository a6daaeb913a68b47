// node bench/tenants.js [sqlite|postgres] (npm run bench:tenants; after npm run build; not run in CI):
// can one account's flood slow another account down? A hostile account floods one instance with
// 1,000 hanging model proxy calls, event streams without boundaries, /models over 100 slow
// credentials, and 1,000 hanging push runs (an http agent whose endpoint never answers), all
// against upstream servers on 127.0.0.1 that hang. Meanwhile a quiet account submits tasks, calls
// the proxy and runs an http agent against an upstream that answers at once, and /health is
// polled. Prints the quiet account's figures alone and during the flood (p50, p99, worst).
// Settings: TENANTS_SAMPLES (40 per figure and phase), TENANTS_FLOOD_PROXY (1000),
// TENANTS_FLOOD_PUSH (1000), TENANTS_FLOOD_STREAMS (50), TENANTS_SLOW_CREDENTIALS (100), BENCH_PORT
// (18996), BENCH_PG_URL as for npm run bench.
import { execFileSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { root, setupTaskhook, sleep } from './servers.js';

const MODE = process.argv[2] ?? 'sqlite';
const SAMPLES = Number(process.env.TENANTS_SAMPLES ?? 40);
const FLOOD_PROXY = Number(process.env.TENANTS_FLOOD_PROXY ?? 1000);
const FLOOD_PUSH = Number(process.env.TENANTS_FLOOD_PUSH ?? 1000);
const FLOOD_STREAMS = Number(process.env.TENANTS_FLOOD_STREAMS ?? 50);
const SLOW_CREDENTIALS = Number(process.env.TENANTS_SLOW_CREDENTIALS ?? 100);
const PORT = Number(process.env.BENCH_PORT ?? 18996);

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const r = (x) => Math.round(x * 10) / 10;
const summary = (times) => {
  const s = [...times].sort((a, b) => a - b);
  return { n: s.length, p50_ms: r(pct(s, 0.5)), p99_ms: r(pct(s, 0.99)), worst_ms: r(s.at(-1)) };
};

/** Upstreams on 127.0.0.1: `hostile` hangs or streams without end, `quiet` answers at once. */
function upstream(kind) {
  const held = new Set();
  const server = http.createServer((req, res) => {
    held.add(res);
    res.on('close', () => held.delete(res));
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (kind === 'quiet') {
        res.setHeader('content-type', 'application/json');
        if (req.url.endsWith('/models')) return res.end(JSON.stringify({ object: 'list', data: [] }));
        if (req.url.endsWith('/chat/completions')) {
          return res.end(
            JSON.stringify({
              id: 'c',
              object: 'chat.completion',
              model: 'm',
              choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }),
          );
        }
        return res.end(JSON.stringify({ result: { summary: 'done', findings: [] } }));
      }
      // Hostile: a streamed completion is an endless event with no boundary; all else hangs.
      if (req.url.endsWith('/chat/completions') && body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const tick = setInterval(() => res.write('data: {"x":"'.padEnd(4096, 'x')), 50);
        res.on('close', () => clearInterval(tick));
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        close() {
          for (const res of held) res.destroy();
          server.close();
        },
      }),
    ),
  );
}

function cli(env, args) {
  return JSON.parse(
    execFileSync(process.execPath, [path.join(root, 'dist/cli/index.js'), ...args], {
      env: { ...process.env, ...env },
    }).toString(),
  );
}

async function json(method, url, headers, body) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A verified account with a session (for provider credentials) and a platform key. */
async function account(th, name) {
  const email = `${name}-${Date.now()}@example.test`;
  cli(th.env, ['user', 'create', '--email', email, '--password', 'benchmark-password', '--verified']);
  const { key } = cli(th.env, ['key', 'create', '--email', email, '--name', name]);
  const { token } = await json('POST', `${th.base}/auth/login`, {}, { email, password: 'benchmark-password' });
  return { key: { 'x-api-key': key }, session: { authorization: `Bearer ${token}` } };
}

async function credential(th, who, name, baseUrl) {
  return json('POST', `${th.base}/user/provider_credentials`, who.session, {
    name,
    provider: 'openai',
    base_url: `${baseUrl}/v1`,
    api_key: 'sk-bench-upstream-key',
  });
}

/** Times `fn` SAMPLES times, one after another. */
async function sample(fn) {
  const times = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return summary(times);
}

async function main() {
  const hostile = await upstream('hostile');
  const quiet = await upstream('quiet');
  const th = await setupTaskhook({
    mode: MODE,
    port: PORT,
    extraEnv: { TASKHOOK_ALLOW_PRIVATE_URLS: 'true', TASKHOOK_LOG_LEVEL: 'error' },
  });
  const floods = [];
  try {
    const a = await account(th, 'hostile');
    const b = await account(th, 'quiet');

    // The quiet account: a pull agent, a proxy credential and an http agent that answer at once.
    const pull = await json('POST', `${th.base}/agent`, b.key, { name: 'pull', concurrency: 1000 });
    await credential(th, b, 'fast', quiet.url);
    const push = await json('POST', `${th.base}/agent`, b.key, {
      name: 'push',
      concurrency: 100,
      runtime: { type: 'http', url: `${quiet.url}/run`, timeout_seconds: 30 },
    });
    const submit = () =>
      json('POST', `${th.base}/agent/request/${pull.uuid}`, b.key, { message: 'quiet work' }).then(() => undefined);
    const proxy = () =>
      json('POST', `${th.base}/spotlight/v1/chat/completions`, b.key, {
        model: 'fast/m',
        messages: [{ role: 'user', content: 'hi' }],
      });
    const pushRun = async () => {
      const task = await json('POST', `${th.base}/agent/request/${push.uuid}`, b.key, { message: 'run' });
      for (;;) {
        const got = await json('GET', `${th.base}/agent/${push.uuid}/task/${task.task_id}`, b.key);
        if (['completed', 'failed', 'cancelled'].includes(got.status)) return;
        await sleep(20);
      }
    };
    const health = () => fetch(`${th.base}/health`).then((res) => res.arrayBuffer());
    const measure = async () => ({
      submit: await sample(submit),
      proxy_call: await sample(proxy),
      push_run: await sample(pushRun),
      health: await sample(health),
    });

    await measure(); // warm up
    const alone = await measure();

    // The hostile account's flood.
    await credential(th, a, 'hang', hostile.url);
    for (let i = 0; i < SLOW_CREDENTIALS - 1; i++) await credential(th, a, `slow${i}`, hostile.url);
    const hanging = await json('POST', `${th.base}/agent`, a.key, {
      name: 'hanging',
      concurrency: 1000,
      runtime: { type: 'http', url: `${hostile.url}/run`, timeout_seconds: 300 },
    });
    const statuses = {};
    const note = (what) => (res) => {
      const key = `${what} ${res?.status ?? 'error'}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
      return res?.body?.cancel().catch(() => undefined);
    };
    const stop = new AbortController();
    setMaxListeners(0, stop.signal);
    const opts = (body) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...a.key },
      body: JSON.stringify(body),
      signal: stop.signal,
    });
    for (let i = 0; i < FLOOD_PUSH; i++) {
      floods.push(
        fetch(`${th.base}/agent/request/${hanging.uuid}`, opts({ message: 'hang' }))
          .then(note('push submit'))
          .catch(() => undefined),
      );
    }
    for (let i = 0; i < FLOOD_PROXY; i++) {
      const stream = i < FLOOD_STREAMS;
      floods.push(
        fetch(
          `${th.base}/spotlight/v1/chat/completions`,
          opts({ model: 'hang/m', stream, messages: [{ role: 'user', content: 'hi' }] }),
        )
          .then(note(stream ? 'proxy stream' : 'proxy call'))
          .catch(() => undefined),
      );
    }
    for (let i = 0; i < 4; i++) {
      floods.push(
        fetch(`${th.base}/spotlight/v1/models`, { headers: a.key, signal: stop.signal })
          .then(note('models'))
          .catch(() => undefined),
      );
    }
    await sleep(1000);
    const during = await measure();
    stop.abort();
    console.log(
      JSON.stringify(
        {
          mode: MODE,
          cores: cpus().length,
          load_average: loadavg().map(r),
          flood: {
            hanging_proxy_calls: FLOOD_PROXY,
            of_which_streams_without_boundaries: FLOOD_STREAMS,
            hanging_push_runs: FLOOD_PUSH,
            slow_credentials_for_models: SLOW_CREDENTIALS,
            answers_seen_before_the_end: statuses,
          },
          quiet_account_alone: alone,
          quiet_account_during_flood: during,
        },
        null,
        2,
      ),
    );
  } finally {
    await Promise.allSettled(floods);
    await th.stop();
    hostile.close();
    quiet.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
