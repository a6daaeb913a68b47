import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_RETRY_SCHEDULE, loadConfig, renderConfigTable, SETTINGS } from '../src/config.js';

describe('loadConfig defaults', () => {
  it('serves the embedded default with an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      publicUrl: 'http://localhost:8080',
      dataDir: './data',
      allowPrivateUrls: false,
      rateLimit: 1000,
      callbackRetrySchedule: [5, 300, 1800, 7200, 18000, 36000, 36000],
      sqliteSynchronous: 'full',
      maxBodyBytes: 1024 * 1024,
      heapGrowingPercent: 25,
    });
    for (const unset of ['databaseUrl', 'redisUrl', 'jwtSecret', 'encryptionKey', 'smtpUrl'] as const) {
      expect(config[unset], unset).toBeUndefined();
    }
    expect(DEFAULT_RETRY_SCHEDULE).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
  });

  it('treats empty values as unset', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '  ', TASKHOOK_JWT_SECRET: '', TASKHOOK_RATE_LIMIT: '' });
    expect(config.port).toBe(8080);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.jwtSecret).toBeUndefined();
    expect(config.rateLimit).toBe(1000);
    expect(loadConfig({}).maxSchedulesPerWorkspace).toBe(1000);
  });

  it('derives the public URL from PORT and drops trailing slashes of an explicit one', () => {
    expect(loadConfig({ PORT: '9000' }).publicUrl).toBe('http://localhost:9000');
    expect(loadConfig({ TASKHOOK_PUBLIC_URL: 'https://api.example.com//' }).publicUrl).toBe('https://api.example.com');
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      PORT: '3000',
      HOST: '0.0.0.0',
      TASKHOOK_DATA_DIR: '/var/lib/taskhook',
      DATABASE_URL: 'postgres://u@db:5432/app',
      REDIS_URL: 'redis://cache:6379/0',
      TASKHOOK_JWT_SECRET: 'j'.repeat(32),
      TASKHOOK_ENCRYPTION_KEY: 'e'.repeat(40),
      TASKHOOK_ALLOW_PRIVATE_URLS: 'true',
      TASKHOOK_RATE_LIMIT: '50',
      TASKHOOK_SMTP_URL: 'smtp://mail:25',
      TASKHOOK_CALLBACK_RETRY_SCHEDULE: '1, 2,3.5',
      TASKHOOK_SQLITE_SYNCHRONOUS: 'normal',
      TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE: '250',
    });
    expect(config).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      publicUrl: 'http://localhost:3000',
      dataDir: '/var/lib/taskhook',
      databaseUrl: 'postgres://u@db:5432/app',
      redisUrl: 'redis://cache:6379/0',
      jwtSecret: 'j'.repeat(32),
      encryptionKey: 'e'.repeat(40),
      allowPrivateUrls: true,
      rateLimit: 50,
      smtpUrl: 'smtp://mail:25',
      callbackRetrySchedule: [1, 2, 3.5],
      sqliteSynchronous: 'normal',
      maxSchedulesPerWorkspace: 250,
    });
  });
});

describe('loadConfig refuses bad values, naming the variable', () => {
  it.each([
    ['TASKHOOK_JWT_SECRET', 'j'.repeat(31)],
    ['TASKHOOK_ENCRYPTION_KEY', 'short'],
    ['PORT', 'abc'],
    ['PORT', '80.5'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['TASKHOOK_SQLITE_SYNCHRONOUS', 'off'],
    ['TASKHOOK_SQLITE_SYNCHRONOUS', 'FULLY'],
    ['TASKHOOK_RATE_LIMIT', '0'],
    ['TASKHOOK_RATE_LIMIT', 'lots'],
    ['TASKHOOK_ALLOW_PRIVATE_URLS', 'maybe'],
    ['TASKHOOK_CALLBACK_RETRY_SCHEDULE', '5,soon,60'],
    ['TASKHOOK_CALLBACK_RETRY_SCHEDULE', '5,-1'],
    ['DATABASE_URL', 'mysql://localhost/app'],
    ['REDIS_URL', 'http://localhost:6379'],
    ['TASKHOOK_PUBLIC_URL', 'localhost:8080'],
    ['TASKHOOK_SMTP_URL', 'mail.example.com'],
    ['TASKHOOK_MAX_BODY_BYTES', '10'],
    ['TASKHOOK_LOG_LEVEL', 'loud'],
    ['TASKHOOK_PG_POOL_SIZE', '0'],
    ['TASKHOOK_PG_POOL_SIZE', 'many'],
    ['TASKHOOK_PG_IDLE_TIMEOUT_MS', '-5'],
    ['TASKHOOK_PG_STATEMENT_TIMEOUT_MS', '1.5'],
    ['TASKHOOK_PG_PREPARED_STATEMENTS', 'sometimes'],
    ['TASKHOOK_CREDENTIAL_CACHE_MS', '60001'],
    ['TASKHOOK_HEAP_GROWING_PERCENT', '-1'],
    ['TASKHOOK_HEAP_GROWING_PERCENT', '301'],
    ['TASKHOOK_AGENT_CACHE_MS', '60001'],
    ['TASKHOOK_TRIGGER_CACHE_MS', '60001'],
    ['TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE', '0'],
    ['TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE', '100001'],
    ['TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE', '12.5'],
  ])('%s=%s', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
  });

  it('accepts a JWT secret of exactly 32 characters', () => {
    expect(loadConfig({ TASKHOOK_JWT_SECRET: 'x'.repeat(32) }).jwtSecret).toHaveLength(32);
  });

  it('reads the PostgreSQL pool settings and the credential, agent and trigger cache lifetimes, with defaults', () => {
    expect(loadConfig({})).toMatchObject({
      pgPoolSize: 10,
      pgIdleTimeoutMs: 10_000,
      pgStatementTimeoutMs: 10_000,
      pgPreparedStatements: true,
      credentialCacheMs: 1000,
      agentCacheMs: 1000,
      triggerCacheMs: 1000,
    });
    expect(
      loadConfig({
        TASKHOOK_PG_POOL_SIZE: '24',
        TASKHOOK_PG_IDLE_TIMEOUT_MS: '0',
        TASKHOOK_PG_STATEMENT_TIMEOUT_MS: '30000',
        TASKHOOK_PG_PREPARED_STATEMENTS: 'false',
        TASKHOOK_CREDENTIAL_CACHE_MS: '0',
        TASKHOOK_AGENT_CACHE_MS: '0',
        TASKHOOK_TRIGGER_CACHE_MS: '0',
      }),
    ).toMatchObject({
      pgPoolSize: 24,
      pgIdleTimeoutMs: 0,
      pgStatementTimeoutMs: 30_000,
      pgPreparedStatements: false,
      credentialCacheMs: 0,
      agentCacheMs: 0,
      triggerCacheMs: 0,
    });
  });
});

describe('the settings table is the one description of the configuration', () => {
  it('the README shows exactly the table rendered from it (npm run docs:config rewrites it)', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.split('<!-- config-table:start -->')[1]?.split('<!-- config-table:end -->')[0];
    expect(section?.trim()).toBe(renderConfigTable());
  });

  it('every setting has its own variable, and a wrong-typed value is refused naming it', () => {
    const names = Object.values(SETTINGS).map((s) => s.env);
    expect(new Set(names).size).toBe(names.length);
    for (const s of Object.values(SETTINGS)) {
      const kind = s.schema.anyOf ? 'string' : String(s.schema.type);
      const bad = { integer: 'x1', boolean: 'perhaps', array: 'a,b', string: undefined }[kind];
      if (bad === undefined) continue;
      expect(() => loadConfig({ [s.env]: bad }), s.env).toThrow(s.env);
    }
  });
});
