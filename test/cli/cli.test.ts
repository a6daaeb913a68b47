import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { builtCli, cliEnv, freePort, ROOT, type RunResult, removeBuiltCli, waitFor } from '../helpers/cli-process.js';
import { DATABASES, POSTGRES_URL, TEST_PG_SECRETS, type TestDatabase, tempDir } from '../helpers/databases.js';
import { createUser, uniqueEmail } from '../helpers/factories.js';

/** The CLI under test (see builtCli). */
let CLI = '';

/** Runs the built CLI to completion. */
function run(args: string[], env: Record<string, string>): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, env: cliEnv(env), timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

/** Runs the CLI, expects success and one line of JSON on stdout. */
async function runJson(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const result = await run(args, env);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(result.stdout);
}

function expectFailure(result: RunResult, message: RegExp) {
  expect(result.code).not.toBe(0);
  expect(result.code).not.toBeNull();
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(message);
}

/** Resolves with the connection, or rejects (e.g. ECONNREFUSED once nothing listens). */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** PostgreSQL mode takes its secrets from the environment only. */
const PG_SECRET_ENV = {
  TASKHOOK_JWT_SECRET: TEST_PG_SECRETS.jwtSecret,
  TASKHOOK_ENCRYPTION_KEY: TEST_PG_SECRETS.encryptionKey,
};

function storage(database: TestDatabase) {
  const dataDir = tempDir('taskhook-cli-');
  const env: Record<string, string> = { TASKHOOK_DATA_DIR: dataDir };
  if (database.databaseUrl) Object.assign(env, { DATABASE_URL: database.databaseUrl, ...PG_SECRET_ENV });
  return { dataDir, env };
}

beforeAll(async () => {
  CLI = await builtCli();
}, 300_000);
afterAll(() => removeBuiltCli(CLI));

describe('taskhook CLI arguments', () => {
  it('exits non-zero with a message on stderr for missing, unknown or bad options', async () => {
    const { env } = storage(DATABASES[0] as TestDatabase);
    const email = uniqueEmail();
    // One after another: six at once on a busy two-core machine can outlast the per-run limit.
    const runs: RunResult[] = [];
    for (const args of [
      ['user', 'create', '--email', email],
      ['user', 'create', '--email', email, '--password', 'long enough', '--admin'],
      ['key', 'create', '--email', email],
      ['user', 'create', '--email', email, '--password', 'short'],
      ['user', 'set-password', '--email', email, '--password', 'short'],
      ['user', 'rename', '--email', email],
    ]) {
      runs.push(await run(args, env));
    }
    const [noPassword, unknownOption, noName, shortPassword, shortReset, noCommand] = runs as [
      RunResult,
      RunResult,
      RunResult,
      RunResult,
      RunResult,
      RunResult,
    ];
    expectFailure(noPassword, /required option '--password <password>' not specified/);
    expectFailure(unknownOption, /unknown option '--admin'/);
    expectFailure(noName, /required option '--name <name>' not specified/);
    expectFailure(shortPassword, /^taskhook: .*at least 8 characters/);
    expectFailure(shortReset, /^taskhook: .*at least 8 characters/);
    expectFailure(noCommand, /unknown command 'rename'/);
  }, 300_000);
});

describe.each(DATABASES)('taskhook CLI on $name', (database) => {
  const { dataDir, env } = storage(database);
  let migrations: RunResult[];
  let t: TestApp;

  beforeAll(async () => {
    migrations = [await run(['migrate'], env), await run(['migrate'], env)];
    // An app on the same storage: the same data dir (SQLite) or the same database (PostgreSQL).
    t = await buildTestApp(database, { config: { dataDir } });
  });
  afterAll(() => t.close());

  it('migrate prints the applied migrations as JSON, and none the second time', () => {
    const [first, second] = migrations as [RunResult, RunResult];
    expect(first.code, first.stderr).toBe(0);
    const applied = JSON.parse(first.stdout).applied;
    expect(Array.isArray(applied) && applied.every((m: unknown) => typeof m === 'string')).toBe(true);
    if (database.name === 'sqlite') expect(applied).toContain('001-foundation');
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [] });
  });

  it('user create prints {uuid, email} and refuses a duplicate e-mail', async () => {
    const email = uniqueEmail();
    const created = await runJson(
      ['user', 'create', '--email', email, '--password', 'cli password 1', '--verified'],
      env,
    );
    expect(created).toEqual({ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), email });
    const login = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'cli password 1' } });
    expect(login.statusCode).toBe(200);
    expect(login.json().user).toEqual(created);

    const duplicate = await run(['user', 'create', '--email', email.toUpperCase(), '--password', 'another one'], env);
    expectFailure(duplicate, /^taskhook: An account with this e-mail already exists\n$/);
  });

  it('user verify lets an unverified user log in', async () => {
    const email = uniqueEmail();
    await runJson(['user', 'create', '--email', email, '--password', 'cli password 2'], env);
    const before = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'cli password 2' } });
    expect(before.statusCode).toBe(403);

    const [verified, unknown] = await Promise.all([
      runJson(['user', 'verify', '--email', email], env),
      run(['user', 'verify', '--email', uniqueEmail()], env),
    ]);
    expect(verified).toEqual({ uuid: expect.any(String), email });
    expectFailure(unknown, /not found/i);
    const after = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'cli password 2' } });
    expect(after.statusCode).toBe(200);
  });

  it('user set-password voids earlier session tokens, not platform keys', async () => {
    const user = await createUser(t);
    expect((await call(t.app, 'GET', '/agent/list', { token: user.token })).statusCode).toBe(200);
    const changed = await runJson(['user', 'set-password', '--email', user.email, '--password', 'brand new one'], env);
    expect(changed).toEqual({ uuid: user.uuid, email: user.email });

    const old = await call(t.app, 'GET', '/agent/list', { token: user.token });
    expect(old.statusCode).toBe(401);
    expect(old.json()).toEqual({ error: 'Invalid or expired token' });
    expect((await call(t.app, 'GET', '/agent/list', { token: user.key })).statusCode).toBe(200);
    const oldPassword = await call(t.app, 'POST', '/auth/login', {
      body: { email: user.email, password: user.password },
    });
    expect(oldPassword.statusCode).toBe(401);
    const relogin = await call(t.app, 'POST', '/auth/login', {
      body: { email: user.email, password: 'brand new one' },
    });
    expect(relogin.statusCode).toBe(200);
  });

  it('key create prints {uuid, name, key, role, workspace_uuid, models} once, and the key works against the API', async () => {
    const user = await createUser(t);
    const [created, unknown] = await Promise.all([
      runJson(['key', 'create', '--email', user.email, '--name', 'from the cli'], env),
      run(['key', 'create', '--email', uniqueEmail(), '--name', 'x'], env),
    ]);
    expect(created).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'from the cli',
      key: expect.stringMatching(/^sk_service_[0-9A-Za-z]{49}$/),
      role: 'admin',
      // The user's personal workspace, whose uuid is the user's.
      workspace_uuid: user.uuid,
      models: null,
    });
    expectFailure(unknown, /not found/i);

    const key = created.key as string;
    const res = await call(t.app, 'GET', '/agent/list', { headers: { 'x-service-api-key': key } });
    expect(res.statusCode).toBe(200);
    const listed = (await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).json().keys;
    expect(listed).toContainEqual(expect.objectContaining({ uuid: created.uuid, name: 'from the cli' }));
  });

  it('key create --workspace --role makes a key of a workspace the user administers, with that role', async () => {
    const owner = await createUser(t);
    const viewerKey = await runJson(
      ['key', 'create', '--email', owner.email, '--name', 'read only', '--workspace', owner.uuid, '--role', 'viewer'],
      env,
    );
    expect(viewerKey).toMatchObject({ role: 'viewer', workspace_uuid: owner.uuid });
    const read = await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': viewerKey.key as string } });
    expect(read.statusCode).toBe(200);
    const write = await call(t.app, 'POST', '/agent', {
      headers: { 'x-api-key': viewerKey.key as string },
      body: { name: 'nope' },
    });
    expect(write.statusCode).toBe(403);
    expect(write.json().error.code).toBe('FORBIDDEN');
    // Not a member of the named workspace (another user's personal one), or a role that is not a key's.
    const other = await createUser(t);
    const [foreign, owned] = await Promise.all([
      run(['key', 'create', '--email', owner.email, '--name', 'x', '--workspace', other.uuid], env),
      run(['key', 'create', '--email', owner.email, '--name', 'x', '--role', 'owner'], env),
    ]);
    expectFailure(foreign, /not an admin or owner/i);
    expectFailure(owned, /admin, member or viewer/i);
  });

  it('key create --models limits the key to those model patterns and prints them; a bad pattern fails', async () => {
    const user = await createUser(t);
    const [limited, bad] = await Promise.all([
      runJson(['key', 'create', '--email', user.email, '--name', 'models', '--models', 'openai/*,route:chat'], env),
      run(['key', 'create', '--email', user.email, '--name', 'bad', '--models', 'a*b'], env),
    ]);
    expect(limited).toMatchObject({ name: 'models', models: ['openai/*', 'route:chat'] });
    expectFailure(bad, /models\[0\]/);
    const listed = (await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).json().keys;
    expect(listed).toContainEqual(expect.objectContaining({ uuid: limited.uuid, models: ['openai/*', 'route:chat'] }));
  });

  describe('serve', () => {
    let child: ChildProcess | undefined;
    let inFlight: { status: string; connection: string | undefined } | undefined;
    afterAll(() => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    it('serves until SIGTERM, finishes the request in flight, then exits 0 and frees the port', async () => {
      const port = await freePort();
      const server = spawn(process.execPath, [CLI, 'serve'], {
        cwd: ROOT,
        env: cliEnv({ ...env, PORT: String(port), HOST: '127.0.0.1', TASKHOOK_LOG_LEVEL: 'debug' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = server;
      let output = '';
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
      };
      server.stdout?.on('data', collect);
      server.stderr?.on('data', collect);
      const exited = once(server, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

      await waitFor('the server to listen', () => output.includes('taskhook is serving') || server.exitCode !== null);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status, output).toBe(200);
      expect(await health.json()).toEqual({ status: 'healthy', database: 'connected' });

      // A request whose body is only half sent when the signal arrives.
      const requestId = `inflight-${randomUUID()}`;
      const body = JSON.stringify({ email: uniqueEmail(), password: 'in flight password' });
      const socket = await connect(port);
      let response = '';
      socket.on('data', (chunk: Buffer) => {
        response += chunk.toString();
      });
      socket.write(
        'POST /auth/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n\r\n${body.slice(0, 10)}`,
      );
      await waitFor('the request to arrive', () => output.includes(requestId));

      server.kill('SIGTERM');
      await waitFor('shutdown to begin', () => output.includes('shutting down'));
      expect(server.exitCode).toBeNull();
      socket.write(body.slice(10));
      await waitFor('the response', () => /\r\n\r\n.*\}$/s.test(response));
      const [head = '', payload = ''] = response.split('\r\n\r\n');
      expect(head.split('\r\n')[0], response).toBe('HTTP/1.1 201 Created');
      expect(JSON.parse(payload).user.email_verified).toBe(false);
      inFlight = {
        status: head.split('\r\n')[0] ?? '',
        connection: /^connection:\s*(.*)$/im.exec(head)?.[1]?.trim().toLowerCase(),
      };
      socket.destroy();

      const [code, signal] = await exited;
      expect({ code, signal }, output).toEqual({ code: 0, signal: null });
      await expect(connect(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    }, 30_000);

    // A keep-alive client would otherwise hold the process open until the 30 s force-exit.
    it('tells the client of the in-flight request to close its connection', () => {
      expect(inFlight?.status).toBe('HTTP/1.1 201 Created');
      expect(inFlight?.connection).toBe('close');
    });
  });
});

describe.runIf(POSTGRES_URL)('taskhook migrate on a new, empty PostgreSQL database', () => {
  const name = `taskhook_cli_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const freshUrl = () => {
    const url = new URL(POSTGRES_URL as string);
    url.pathname = `/${name}`;
    return url.toString();
  };
  let admin: Db;

  beforeAll(async () => {
    admin = connectDb({ databaseUrl: POSTGRES_URL, sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
    await sql.raw(`create database ${name}`).execute(admin.kysely);
  });
  afterAll(async () => {
    await sql.raw(`drop database if exists ${name} with (force)`).execute(admin.kysely);
    await admin.close();
  });

  it('works as the first command an operator runs, also from several instances at once, and serve then finds it done', async () => {
    const env = { TASKHOOK_DATA_DIR: tempDir('taskhook-cli-'), DATABASE_URL: freshUrl(), ...PG_SECRET_ENV };
    const runs = await Promise.all([run(['migrate'], env), run(['migrate'], env), run(['migrate'], env)]);
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const applied = runs.flatMap((r) => JSON.parse(r.stdout).applied as string[]);
    expect(applied).toContain('001-foundation');
    expect(new Set(applied).size).toBe(applied.length);
    const again = await runJson(['migrate'], env);
    expect(again).toEqual({ applied: [] });
    const created = await runJson(['user', 'create', '--email', uniqueEmail(), '--password', 'cli password 1'], env);
    expect(created.uuid).toEqual(expect.any(String));
  }, 120_000);
});

describe.each(DATABASES)('taskhook user disable, enable and delete on $name', (database) => {
  it('disable refuses the user’s key and login, enable restores them, delete removes the user', async () => {
    const { env } = storage(database);
    const email = uniqueEmail();
    await runJson(['user', 'create', '--email', email, '--password', 'cli password 1', '--verified'], env);
    expect(await runJson(['user', 'disable', '--email', email], env)).toMatchObject({ email, disabled: true });
    expect(await runJson(['user', 'enable', '--email', email], env)).toMatchObject({ email, disabled: false });
    expect(await runJson(['user', 'delete', '--email', email], env)).toMatchObject({ email, deleted: true });
    expectFailure(await run(['user', 'delete', '--email', email], env), /User not found/);
  }, 120_000);
});
