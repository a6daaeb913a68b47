import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser } from '../helpers/factories.js';
import { listeningApp } from '../sdk/support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A python3 of at least 3.9 (TASKHOOK_TEST_PYTHON names another interpreter, e.g. CI's 3.9), else
 * undefined (CI insists on one).
 */
function python(): string | undefined {
  const candidate = process.env.TASKHOOK_TEST_PYTHON || 'python3';
  const probe = spawnSync(candidate, ['-c', 'import sys; print(sys.version_info >= (3, 9))'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === 'True') return candidate;
  if (process.env.CI) throw new Error('CI needs python3 >= 3.9 for the Python SDK tests');
  console.warn('\n*** python3 >= 3.9 not found: the Python SDK tests are NOT running (CI fails in this case) ***\n');
  return undefined;
}

const interpreter = python();

// The SDK is a client of the HTTP API: one database is enough (the API's storage is tested on both).
describe.skipIf(!interpreter).each(DATABASES.filter((d) => d.name === 'sqlite'))(
  'the Python SDK on $name',
  (database) => {
    let t: TestApp;
    let baseUrl: string;
    let apiKey: string;

    beforeAll(async () => {
      ({ t, baseUrl } = await listeningApp(database));
      apiKey = (await createUser(t)).key;
    });
    afterAll(async () => {
      await t?.close();
    });

    it('passes its unittest suite against a real server', async () => {
      const child = spawn(
        interpreter as string,
        ['-m', 'unittest', 'discover', '-s', 'sdks/python/tests', '-t', 'sdks/python'],
        {
          cwd: ROOT,
          env: { ...process.env, TASKHOOK_URL: baseUrl, TASKHOOK_API_KEY: apiKey, PYTHONDONTWRITEBYTECODE: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(output).toMatch(/^OK/m);
      expect(code, output).toBe(0);
    }, 180_000);
  },
);
