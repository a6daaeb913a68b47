import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES, tempDir } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { listeningApp } from '../sdk/support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SDK = join(ROOT, 'sdks/typescript');

/** Runs a command to its end; throws with its output unless it exits 0. */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const WORKER_SCRIPT = `
import { runWorker, TaskhookClient, NotFoundError } from '@taskhook/sdk';
const agentId = process.env.TASKHOOK_AGENT_ID;
const client = new TaskhookClient();
const worker = runWorker({ agentId, waitSeconds: 1, handleSignals: false, log: () => {},
  async handler(task, ctx) {
    await ctx.progress('working', 1, 1, true);
    return { summary: 'packed: ' + task.message };
  },
});
const { task_id } = await client.submit(agentId, { message: 'hello' });
const done = await client.waitFor(agentId, task_id, { timeoutMs: 20000, intervalMs: 50 });
let notFound = false;
try { await client.get(agentId, '00000000-0000-4000-8000-000000000000'); } catch (e) { notFound = e instanceof NotFoundError; }
await worker.stop();
console.log(JSON.stringify({ status: done.status, summary: done.result?.summary, notFound }));
`;

describe.each(DATABASES.filter((d) => d.name === 'sqlite'))('the @taskhook/sdk tarball on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  let apiKey: string;
  let agentId: string;
  let installDir: string;

  beforeAll(async () => {
    ({ t, baseUrl } = await listeningApp(database));
    const user = await createUser(t);
    apiKey = user.key;
    agentId = (await createAgent(t, user)).uuid;
    const packDir = tempDir('taskhook-pack-');
    // `npm pack` builds the package (prepack) and writes the tarball; no registry involved.
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', packDir], SDK)) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    const [tarball] = packed;
    if (!tarball) throw new Error('npm pack wrote nothing');
    expect(tarball.filename).toBe(
      `taskhook-sdk-${JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')).version}.tgz`,
    );
    const files = tarball.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts']),
    );
    expect(
      files.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(f)),
    ).toEqual([]);
    installDir = tempDir('taskhook-sdk-install-');
    mkdirSync(installDir, { recursive: true });
    writeFileSync(
      join(installDir, 'package.json'),
      JSON.stringify({ name: 'sdk-smoke', private: true, type: 'module' }),
    );
    // No registry: npm ci fetched undici's tarball but not its registry metadata, so --offline
    // cannot resolve the SDK's one dependency by itself. Hand it the copy the repository installed.
    const undici = JSON.parse(
      run(
        'npm',
        ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir],
        join(ROOT, 'node_modules/undici'),
      ),
    )[0];
    run(
      'npm',
      [
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        join(packDir, tarball.filename),
        join(packDir, undici.filename),
      ],
      installDir,
    );
  }, 180_000);
  afterAll(async () => {
    await t?.close();
  });

  it('installs nothing of the server: only @taskhook/sdk and undici', () => {
    const top = readdirSync(join(installDir, 'node_modules')).filter((n) => !n.startsWith('.'));
    expect(top.sort()).toEqual(['@taskhook', 'undici']);
    expect(readdirSync(join(installDir, 'node_modules/@taskhook'))).toEqual(['sdk']);
    for (const server of ['better-sqlite3', 'fastify', 'pg', 'kysely']) {
      expect(top).not.toContain(server);
    }
  });

  it('runs a worker and a client from the installed package against a real server', async () => {
    writeFileSync(join(installDir, 'smoke.mjs'), WORKER_SCRIPT);
    const child = spawn(process.execPath, ['smoke.mjs'], {
      cwd: installDir,
      env: { ...process.env, TASKHOOK_URL: baseUrl, TASKHOOK_API_KEY: apiKey, TASKHOOK_AGENT_ID: agentId },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => {
      output += c;
    });
    child.stderr.on('data', (c) => {
      output += c;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, output).toBe(0);
    expect(JSON.parse(output.trim().split('\n').pop() ?? '{}')).toEqual({
      status: 'completed',
      summary: 'packed: hello',
      notFound: true,
    });
  }, 60_000);

  it('keeps taskhook and taskhook/sdk as re-exports of the very same objects', () => {
    const script = `
      const a = await import('taskhook/sdk'); const b = await import('taskhook'); const c = await import('@taskhook/sdk');
      console.log(a.TaskhookClient === c.TaskhookClient && b.runWorker === c.runWorker && a.verifyWebhook === c.verifyWebhook);`;
    expect(run(process.execPath, ['--input-type=module', '-e', script], ROOT).trim()).toBe('true');
  });
});
