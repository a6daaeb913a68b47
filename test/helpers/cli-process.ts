import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIST_CLI = path.join(ROOT, 'dist/cli/index.js');

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Newest modification time of any file under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * The CLI to test: dist/ when it is newer than every file of src/ (CI builds it first); otherwise
 * src/ compiled into a directory of this run (under node_modules, so the CLI still finds its
 * dependencies), leaving dist/ to others. Remove a private build with `removeBuiltCli`.
 */
export async function builtCli(): Promise<string> {
  if (existsSync(DIST_CLI) && statSync(DIST_CLI).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return DIST_CLI;
  const outDir = path.join(ROOT, 'node_modules/.cache', `taskhook-cli-test-${process.pid}-${Date.now()}`);
  const result = await new Promise<RunResult>((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir],
      { cwd: ROOT },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
  if (result.code !== 0) throw new Error(`building the CLI failed:\n${result.stdout}\n${result.stderr}`);
  // Module scope stops at node_modules: declare the compiled files ES modules again.
  writeFileSync(path.join(outDir, 'package.json'), '{"type": "module"}\n');
  return path.join(outDir, 'cli/index.js');
}

export function removeBuiltCli(cli: string): void {
  if (cli !== DIST_CLI) rmSync(path.dirname(path.dirname(cli)), { recursive: true, force: true });
}

/** The environment of a CLI process: ours without any taskhook settings, plus `env`. */
export function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(TASKHOOK_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|NODE_OPTIONS$|VITEST|SQLITE_TMPDIR$)/.test(name),
    ),
  );
  return { ...base, TASKHOOK_SQLITE_SYNCHRONOUS: 'normal', ...env };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Resolves once `check()` holds, polling every 50 ms; fails after ~15 s. */
export async function waitFor(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
