import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/databases.js';
import { ROOT } from '../helpers/server-process.js';

/** Resolves the generated secrets in a separate process (as a server or CLI starting would). */
function resolveInChild(dataDir: string): Promise<{ jwtSecret: string; encryptionKey: string }> {
  const script = `
    import { loadConfig } from './src/config.ts';
    import { resolveSecrets } from './src/lib/secrets.ts';
    const config = loadConfig({ TASKHOOK_DATA_DIR: process.argv[1] });
    const secrets = await resolveSecrets(config, { dialect: 'sqlite' });
    process.stdout.write(JSON.stringify(secrets));`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, dataDir],
      { cwd: ROOT, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

describe('generated secrets in embedded mode', () => {
  it('are the same for processes starting together on a new data dir, and kept in a 0600 file', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const results = await Promise.all(Array.from({ length: 4 }, () => resolveInChild(dataDir)));
    for (const r of results) expect(r).toEqual(results[0]);
    expect(results[0]?.jwtSecret.length).toBeGreaterThanOrEqual(32);
    expect(results[0]?.encryptionKey).not.toBe(results[0]?.jwtSecret);
    expect(statSync(path.join(dataDir, 'secrets.json')).mode & 0o777).toBe(0o600);
    expect(await resolveInChild(dataDir)).toEqual(results[0]);
  }, 60_000);
});
