// Servers the benchmarks drive, each in its own process: the bare Fastify baseline and taskhook
// (a fresh SQLite directory, or a freshly created PostgreSQL database), with a user, a key, an
// agent, a queued task and a trigger ready to use.
import { execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist/cli/index.js');
/**
 * The Node.js flags `npm start` gives the server (package.json's start script), so the benchmark
 * measures the server as the README runs it.
 */
const startScript = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
const startFlags = (startScript.match(/^node((?: --\S+)*) /)?.[1] ?? '').split(' ').filter(Boolean);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A process's CPU time so far (user + system, µs) from /proc, whose times are in 1/100 s; 0 once it is gone. */
export function cpuUs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 1e4;
  } catch {
    return 0;
  }
}

/** The PostgreSQL server the benchmark may create databases on. */
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Drops and creates a database on the benchmark's PostgreSQL server; returns its URL. */
export async function freshPgDatabase(name) {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database `freshPgDatabase` made, once the server using it has stopped. */
export async function dropPgDatabase(name) {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end();
  }
}

export async function waitHttp(url) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await sleep(100);
  }
  throw new Error(`${url} did not come up`);
}

/** The bare Fastify route in its own process. */
export async function startBare(port) {
  const child = fork(path.join(root, 'bench/bare-server.js'), { env: { ...process.env, PORT: String(port) } });
  await new Promise((r) => child.once('message', r));
  return { pid: child.pid, base: `http://127.0.0.1:${port}`, kill: () => child.kill() };
}

/** Runs the taskhook CLI with `env` and returns its JSON answer. */
export function cliJson(args, env) {
  return JSON.parse(execFileSync(process.execPath, [cli, ...args], { env: { ...process.env, ...env } }).toString());
}

/** POSTs a JSON body and returns the JSON answer; throws on a non-2xx status. */
export async function post(url, headers, body) {
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * Starts `taskhook serve` on SQLite (synchronous=full) or PostgreSQL (a fresh database) and
 * prepares what the measurements need.
 */
export async function setupTaskhook({ mode, port, extraEnv = {}, nodeArgs = [] }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'taskhook-bench-'));
  const databaseUrl = mode === 'postgres' ? await freshPgDatabase(`taskhook_bench_${port}`) : undefined;
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    TASKHOOK_DATA_DIR: dataDir,
    TASKHOOK_LOG_LEVEL: 'warn',
    TASKHOOK_RATE_LIMIT: '1000000000',
    TASKHOOK_SQLITE_SYNCHRONOUS: 'full',
    TASKHOOK_PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...(databaseUrl
      ? {
          DATABASE_URL: databaseUrl,
          // PostgreSQL mode takes its secrets from the environment only.
          TASKHOOK_JWT_SECRET: 'bench-jwt-secret-of-at-least-32-characters',
          TASKHOOK_ENCRYPTION_KEY: 'bench-encryption-key-of-at-least-32-chars',
        }
      : {}),
    ...extraEnv,
  };
  const email = `bench-${Date.now()}@example.test`;
  cliJson(['user', 'create', '--email', email, '--password', 'benchmark-password', '--verified'], env);
  const { key } = cliJson(['key', 'create', '--email', email, '--name', 'bench'], env);
  // BENCH_SERVER_NODE_ARGS: Node.js flags for the server process only (e.g. a V8 heap setting to compare).
  const benchArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...startFlags, ...benchArgs, ...nodeArgs, cli, 'serve'], {
    env: { ...process.env, ...env },
    stdio: 'inherit',
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitHttp(`${base}/health`);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const agent = await post(`${base}/agent`, headers, { name: 'bench', concurrency: 1000 });
  const submitBody = JSON.stringify({ message: 'review this diff please', priority: 5 });
  const first = await post(`${base}/agent/request/${agent.uuid}`, headers, JSON.parse(submitBody));
  const trigger = await post(`${base}/v1/agent/${agent.uuid}/triggers`, headers, {
    name: 'bench',
    message_template: 'Review {{payload.pull_request.title}}',
  });
  const login = await post(
    `${base}/auth/login`,
    { 'content-type': 'application/json' },
    {
      email,
      password: 'benchmark-password',
    },
  );
  const ingest = await fetch(`${base}/auth/generate_ingest_token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${login.token}` },
  }).then((r) => r.json());
  return {
    pid: child.pid,
    base,
    env,
    ingestToken: ingest.token,
    key,
    databaseUrl,
    headers,
    agent,
    pollUrl: first.poll_url,
    submitUrl: `${base}/agent/request/${agent.uuid}`,
    submitBody,
    webhookUrl: trigger.webhook_url,
    webhookHeaders: { 'content-type': 'application/json', 'x-webhook-secret': trigger.webhook_secret },
    webhookBody: JSON.stringify({ action: 'opened', pull_request: { title: 'Fix the parser' } }),
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dataDir, { recursive: true, force: true });
      if (databaseUrl) await dropPgDatabase(new URL(databaseUrl).pathname.slice(1));
    },
  };
}
