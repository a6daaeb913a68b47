import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { TaskhookClient } from '@taskhook/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { listeningApp, within } from '../sdk/support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const DIFF = [
  'diff --git a/src/pay.ts b/src/pay.ts',
  'index 1111111..2222222 100644',
  '--- a/src/pay.ts',
  '+++ b/src/pay.ts',
  '@@ -10,4 +10,7 @@ export function pay() {',
  '   const amount = total();',
  "+  console.log('paying', amount);",
  '   // charge the card',
  '+  // TODO: handle refunds',
  "+  const key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';",
  '   return charge(amount);',
  ' }',
  '',
].join('\n');

const FINDINGS = [
  { file: 'src/pay.ts', line: 11, severity: 'warning', message: 'leftover console output' },
  { file: 'src/pay.ts', line: 13, severity: 'info', message: 'TODO left in code: handle refunds' },
  {
    file: 'src/pay.ts',
    line: 14,
    severity: 'error',
    message: 'looks like a Stripe secret key; move it to configuration',
  },
];

const QUESTION = 'Please send the code to review: a unified diff (git diff) or a source file.';

describe.each(DATABASES.filter((d) => d.name === 'sqlite'))('the review-worker example on $name', (database) => {
  let t: TestApp;
  let client: TaskhookClient;
  let agentId: string;
  let child: ChildProcess;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let output = '';
  let files: Server;
  let filesUrl: string;

  beforeAll(async () => {
    // Sources the worker fetches from metadata.url: a small file, a chunked body over 1 MiB, a 404.
    files = createServer((req, res) => {
      if (req.url === '/src/tool.py') {
        res.end('import os\n\ndef main():\n    print(os.getcwd())\n');
      } else if (req.url === '/huge.js') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const line = `${'x'.repeat(1023)}\n`;
        for (let i = 0; i < 1100; i++) res.write(line);
        res.end();
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
    let baseUrl: string;
    ({ t, baseUrl } = await listeningApp(database));
    const user = await createUser(t);
    agentId = (await createAgent(t, user, { concurrency: 4 })).uuid;
    client = new TaskhookClient({ baseUrl, apiKey: user.key });
    child = spawn(process.execPath, ['--import', 'tsx', 'examples/review-worker.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TASKHOOK_URL: baseUrl,
        TASKHOOK_API_KEY: user.key,
        TASKHOOK_AGENT_ID: agentId,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr?.on('data', (chunk) => {
      output += String(chunk);
    });
    exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  });

  afterAll(async () => {
    try {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        // The worker stops gracefully: nothing is running, so it exits at once (well within the grace period).
        const result = await within(exited, 8000, 'the example worker to exit').catch((err) => {
          child.kill('SIGKILL');
          throw err;
        });
        expect(result, output).toEqual({ code: 0, signal: null });
      }
    } finally {
      files?.closeAllConnections();
      await new Promise((resolve) => files?.close(resolve));
      await t?.close();
    }
  });

  const waitFor = (taskId: string, until?: Array<'awaiting_input'>) =>
    client.waitFor(agentId, taskId, { until, intervalMs: 100, timeoutMs: 20_000 }).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output:\n${output}`);
    });

  it('reviews a diff: the console.log, the TODO and the Stripe key at their new-file lines', async () => {
    const { task_id } = await client.submit(agentId, { message: DIFF });
    const done = await waitFor(task_id);
    expect(done).toMatchObject({
      status: 'completed',
      result: {
        summary: 'Reviewed 1 file(s): 3 finding(s) (1 error, 1 warning, 1 info).',
        findings: FINDINGS,
      },
    });
  });

  it('asks for the code when the message is prose, then reviews the diff sent as a reply', async () => {
    const { task_id } = await client.submit(agentId, { message: 'please review my code' });
    const asked = await waitFor(task_id, ['awaiting_input']);
    expect(asked.input_request?.message).toBe(QUESTION);
    expect(asked.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'please review my code'],
      ['agent', QUESTION],
    ]);

    await client.message(agentId, task_id, DIFF);
    const done = await waitFor(task_id);
    expect(done.status).toBe('completed');
    expect(done.result?.findings).toEqual(FINDINGS);
    expect(done.messages.map((m) => m.role)).toEqual(['user', 'agent', 'user']);
  });

  it('reviews a whole source file named by metadata.file', async () => {
    const source = ['import os', '', 'def main():', '    print(os.getcwd())', ''].join('\n');
    const { task_id } = await client.submit(agentId, { message: source, metadata: { file: 'tool.py' } });
    const done = await waitFor(task_id);
    expect(done.result).toEqual({
      summary: 'Reviewed 1 file(s): 1 finding(s) (0 error, 1 warning, 0 info).',
      findings: [{ file: 'tool.py', line: 4, severity: 'warning', message: 'leftover print() call' }],
    });
  });

  it('fetches the source from metadata.url and names the file after it', async () => {
    const { task_id } = await client.submit(agentId, {
      message: 'please review this file',
      metadata: { url: `${filesUrl}/src/tool.py` },
    });
    const done = await waitFor(task_id);
    expect(done.result).toEqual({
      summary: 'Reviewed 1 file(s): 1 finding(s) (0 error, 1 warning, 0 info).',
      findings: [{ file: 'tool.py', line: 4, severity: 'warning', message: 'leftover print() call' }],
    });
  });

  it('fails a task whose metadata.url is missing or over 1 MiB, with the reason', async () => {
    const missing = await client.submit(agentId, { message: 'review it', metadata: { url: `${filesUrl}/nope.ts` } });
    expect(await waitFor(missing.task_id)).toMatchObject({
      status: 'failed',
      error: { code: 'FETCH_FAILED', message: `Fetching ${filesUrl}/nope.ts answered HTTP 404` },
    });
    const huge = await client.submit(agentId, { message: 'review it', metadata: { url: `${filesUrl}/huge.js` } });
    expect(await waitFor(huge.task_id)).toMatchObject({
      status: 'failed',
      error: { code: 'TOO_LARGE', message: `${filesUrl}/huge.js is larger than 1 MiB` },
    });
  });
});
