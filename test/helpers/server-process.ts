import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { TEST_PG_SECRETS, type TestDatabase } from './databases.js';

/** The real server and CLI as child processes, for tests that kill and restart them. */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = path.join(ROOT, 'dist/cli/index.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than src/ (CI builds it before the tests). */
export function ensureBuilt(): void {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return;
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') return reject(new Error('no port'));
      server.close(() => resolve(address.port));
    });
  });
}

/** Our environment without any taskhook settings, plus the storage of `db` and `extra` settings. */
export function serverEnv(
  db: TestDatabase,
  dataDir: string,
  port: number,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(TASKHOOK_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|NODE_OPTIONS$|VITEST)/.test(name),
    ),
  );
  return {
    ...base,
    PORT: String(port),
    HOST: '127.0.0.1',
    TASKHOOK_DATA_DIR: dataDir,
    TASKHOOK_LOG_LEVEL: 'warn',
    // Thousands of requests per minute from one key: keep the rate limit out of the way.
    TASKHOOK_RATE_LIMIT: '10000000',
    ...(db.databaseUrl
      ? {
          TASKHOOK_JWT_SECRET: TEST_PG_SECRETS.jwtSecret,
          TASKHOOK_ENCRYPTION_KEY: TEST_PG_SECRETS.encryptionKey,
        }
      : {}),
    ...extra,
    ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
  };
}

/** Runs the CLI and parses the JSON it prints. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`taskhook ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  /** Set just before a test sends SIGKILL: connection errors from then on are expected. */
  killed: boolean;
  exited: Promise<unknown>;
  stderr: () => string;
}

/** Starts `taskhook serve` and resolves once /health answers 200 (fails after 60 s: a loaded CI machine starts slowly). */
export async function startServer(env: NodeJS.ProcessEnv, base: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8_000);
  });
  const server = { child, killed: false, exited: once(child, 'exit'), stderr: () => stderr };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    try {
      const res = await request(`${base}/health`, { headersTimeout: 1_000, bodyTimeout: 1_000 });
      await res.body.dump();
      if (res.statusCode === 200) return server;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`server did not become healthy: exit ${child.exitCode ?? child.signalCode}\n${stderr}`);
}

/** SIGKILL: no shutdown hook, no drain. */
export async function killHard(server: ServerProcess | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.killed = true;
  server.child.kill('SIGKILL');
  await server.exited;
}
