import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** The whole configuration, read from the environment once at start (see README, "Configuration"). */
export const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  publicUrl: Type.String({ pattern: '^https?://[^\\s]+$' }),
  dataDir: Type.String({ minLength: 1 }),
  databaseUrl: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  jwtSecret: Type.Optional(Type.String({ minLength: 32 })),
  encryptionKey: Type.Optional(Type.String({ minLength: 32 })),
  allowPrivateUrls: Type.Boolean(),
  rateLimit: Type.Integer({ minimum: 1 }),
  smtpUrl: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  smtpFrom: Type.String({ minLength: 3 }),
  callbackRetrySchedule: Type.Array(Type.Number({ minimum: 0 }), { minItems: 1 }),
  sqliteSynchronous: Type.Union([Type.Literal('full'), Type.Literal('normal')]),
  maxBodyBytes: Type.Integer({ minimum: 1024 }),
  logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
  trustProxy: Type.Boolean(),
  healthIntervalMs: Type.Integer({ minimum: 50 }),
  sweepIntervalMs: Type.Integer({ minimum: 10 }),
  callbackTimeoutMs: Type.Integer({ minimum: 100 }),
  dashboard: Type.Boolean(),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  return Number(raw);
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function optional(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function schedule(env: Env): number[] {
  const raw = optional(env, 'TASKHOOK_CALLBACK_RETRY_SCHEDULE');
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) {
    throw new ConfigError(`TASKHOOK_CALLBACK_RETRY_SCHEDULE must be comma-separated seconds, got "${raw}"`);
  }
  return parts.map(Number);
}

/**
 * Reads and validates the configuration from environment variables.
 * @throws ConfigError naming the offending variable when a value is malformed.
 */
export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080);
  const config: Config = {
    port,
    host: optional(env, 'HOST') ?? '127.0.0.1',
    publicUrl: (optional(env, 'TASKHOOK_PUBLIC_URL') ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    dataDir: optional(env, 'TASKHOOK_DATA_DIR') ?? './data',
    databaseUrl: optional(env, 'DATABASE_URL'),
    redisUrl: optional(env, 'REDIS_URL'),
    jwtSecret: optional(env, 'TASKHOOK_JWT_SECRET'),
    encryptionKey: optional(env, 'TASKHOOK_ENCRYPTION_KEY'),
    allowPrivateUrls: bool(env, 'TASKHOOK_ALLOW_PRIVATE_URLS', false),
    rateLimit: int(env, 'TASKHOOK_RATE_LIMIT', 1000),
    smtpUrl: optional(env, 'TASKHOOK_SMTP_URL'),
    smtpFrom: optional(env, 'TASKHOOK_SMTP_FROM') ?? 'taskhook <no-reply@localhost>',
    callbackRetrySchedule: schedule(env),
    sqliteSynchronous: (optional(env, 'TASKHOOK_SQLITE_SYNCHRONOUS') ?? 'full') as Config['sqliteSynchronous'],
    maxBodyBytes: int(env, 'TASKHOOK_MAX_BODY_BYTES', 1024 * 1024),
    logLevel: (optional(env, 'TASKHOOK_LOG_LEVEL') ?? 'info') as Config['logLevel'],
    trustProxy: bool(env, 'TASKHOOK_TRUST_PROXY', false),
    healthIntervalMs: int(env, 'TASKHOOK_HEALTH_INTERVAL_MS', 2000),
    sweepIntervalMs: int(env, 'TASKHOOK_SWEEP_INTERVAL_MS', 1000),
    callbackTimeoutMs: int(env, 'TASKHOOK_CALLBACK_TIMEOUT_MS', 10_000),
    dashboard: bool(env, 'TASKHOOK_DASHBOARD', true),
  };
  return validateConfig(config);
}

const ENV_NAMES: Record<string, string> = {
  port: 'PORT',
  host: 'HOST',
  publicUrl: 'TASKHOOK_PUBLIC_URL',
  dataDir: 'TASKHOOK_DATA_DIR',
  databaseUrl: 'DATABASE_URL',
  redisUrl: 'REDIS_URL',
  jwtSecret: 'TASKHOOK_JWT_SECRET (at least 32 characters)',
  encryptionKey: 'TASKHOOK_ENCRYPTION_KEY (at least 32 characters)',
  rateLimit: 'TASKHOOK_RATE_LIMIT',
  smtpUrl: 'TASKHOOK_SMTP_URL',
  sqliteSynchronous: 'TASKHOOK_SQLITE_SYNCHRONOUS (full or normal)',
  maxBodyBytes: 'TASKHOOK_MAX_BODY_BYTES',
  logLevel: 'TASKHOOK_LOG_LEVEL',
};

/** Validates a complete config object (also used by tests that build one directly). */
export function validateConfig(config: Config): Config {
  const clean = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
  const first = Value.Errors(ConfigSchema, clean).First();
  if (first) {
    const key = first.path.split('/')[1] ?? '';
    throw new ConfigError(`Invalid configuration: ${ENV_NAMES[key] ?? key} ${first.message}`);
  }
  return config;
}
