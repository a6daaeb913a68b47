import { Type } from '@sinclair/typebox';
import { DATABASE_SETTINGS } from './settings-database.js';
import { parseList, parseOrigins, parseTrustProxy, setting } from './settings-fns.js';
import { OAUTH_SETTINGS } from './settings-oauth.js';
import { OBSERVABILITY_SETTINGS } from './settings-observability.js';

export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every setting, in the order the README lists them. This table is the only description of the
 * configuration: the schema, the loader, its error messages and the README table come from it.
 */
export const SETTINGS = {
  port: setting({
    env: 'PORT',
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    default: 8080,
    doc: 'Listen port.',
  }),
  host: setting({ env: 'HOST', schema: Type.String({ minLength: 1 }), default: '127.0.0.1', doc: 'Listen address.' }),
  publicUrl: setting({
    env: 'TASKHOOK_PUBLIC_URL',
    schema: Type.String({ pattern: '^https?://[^\\s]+$' }),
    default: (read) => `http://localhost:${read.port}`,
    defaultText: '`http://localhost:$PORT`',
    normalize: (url) => url.replace(/\/+$/, ''),
    doc: 'Prefix of every absolute URL the API returns (poll_url, cancel_url, webhook_url).',
  }),
  dataDir: setting({
    env: 'TASKHOOK_DATA_DIR',
    schema: Type.String({ minLength: 1 }),
    default: './data',
    doc: "Embedded mode: the SQLite file (`taskhook.sqlite`) and generated secrets (`secrets.json`, mode 0600); SQLite's temporary files go here too unless `SQLITE_TMPDIR` is set. The container image sets `/data`.",
  }),
  databaseUrl: setting({
    env: 'DATABASE_URL',
    schema: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
    doc: '`postgres://…` switches storage to PostgreSQL: many instances can share it.',
  }),
  redisUrl: setting({
    env: 'REDIS_URL',
    schema: Type.Optional(Type.String({ pattern: '^rediss?://' })),
    doc: 'Rate-limit counters in Redis, shared by all instances. Without it: PostgreSQL mode keeps them in PostgreSQL (an UNLOGGED table), embedded mode in memory.',
  }),
  jwtSecret: setting({
    env: 'TASKHOOK_JWT_SECRET',
    schema: Type.Optional(Type.String({ minLength: 32 })),
    defaultText: 'embedded: generated once; PostgreSQL: required',
    doc: 'HS256 key of session tokens, at least 32 characters. Embedded mode: generated on first start and kept in `secrets.json` (0600) in the data dir. PostgreSQL mode: required (this or `TASKHOOK_JWT_SECRET_FILE`), never stored in the database; `taskhook secret generate` prints a fresh one.',
  }),
  jwtSecretFile: setting({
    env: 'TASKHOOK_JWT_SECRET_FILE',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    doc: 'A file holding the JWT secret (a trailing newline is ignored), instead of `TASKHOOK_JWT_SECRET`.',
  }),
  encryptionKey: setting({
    env: 'TASKHOOK_ENCRYPTION_KEY',
    schema: Type.Optional(Type.String({ minLength: 32 })),
    defaultText: 'embedded: generated once; PostgreSQL: required',
    doc: 'Encrypts secrets at rest (AES-256-GCM, key derived with HKDF-SHA256); at least 32 characters. Kept and required like the JWT secret.',
  }),
  encryptionKeyFile: setting({
    env: 'TASKHOOK_ENCRYPTION_KEY_FILE',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    doc: 'A file holding the encryption key (a trailing newline is ignored), instead of `TASKHOOK_ENCRYPTION_KEY`.',
  }),
  encryptionKeyPrevious: setting({
    env: 'TASKHOOK_ENCRYPTION_KEY_PREVIOUS',
    schema: Type.Array(Type.String({ minLength: 32 })),
    default: [],
    defaultText: 'unset',
    parse: parseList,
    doc: 'Comma-separated earlier encryption keys that may still open stored secrets after a rotation; new values are sealed with `TASKHOOK_ENCRYPTION_KEY`. `taskhook secret reseal` re-seals everything under the current key, after which these can go.',
  }),
  allowPrivateUrls: setting({
    env: 'TASKHOOK_ALLOW_PRIVATE_URLS',
    schema: Type.Boolean(),
    default: false,
    doc: 'Let outbound calls reach private addresses (self-hosted setups).',
  }),
  rateLimit: setting({
    env: 'TASKHOOK_RATE_LIMIT',
    schema: Type.Integer({ minimum: 1 }),
    default: 1000,
    doc: 'Requests per minute per scope.',
  }),
  rateLimitStoreTimeoutMs: setting({
    env: 'TASKHOOK_RATE_LIMIT_STORE_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 1, maximum: 60_000 }),
    default: 1000,
    doc: 'How long a request waits for the shared rate-limit counter (PostgreSQL or Redis) before it is let through uncounted, so a slow or failed counter store never stalls the API.',
  }),
  smtpUrl: setting({
    env: 'TASKHOOK_SMTP_URL',
    schema: Type.Optional(Type.String({ pattern: '^smtps?://' })),
    doc: 'Where verification e-mails go. Unset: the verification link is written to the log.',
  }),
  smtpFrom: setting({
    env: 'TASKHOOK_SMTP_FROM',
    schema: Type.String({ minLength: 3 }),
    default: 'taskhook <no-reply@localhost>',
    doc: 'Sender of verification e-mails.',
  }),
  callbackRetrySchedule: setting({
    env: 'TASKHOOK_CALLBACK_RETRY_SCHEDULE',
    schema: Type.Array(Type.Number({ minimum: 0 }), { minItems: 1 }),
    default: DEFAULT_RETRY_SCHEDULE,
    doc: 'Seconds between callback attempts after the first (comma-separated).',
  }),
  sqliteSynchronous: setting({
    env: 'TASKHOOK_SQLITE_SYNCHRONOUS',
    schema: Type.Union([Type.Literal('full'), Type.Literal('normal')]),
    default: 'full',
    doc: '`full`: every acknowledged write survives power loss; `normal`: survives process crashes only.',
  }),
  maxBodyBytes: setting({
    env: 'TASKHOOK_MAX_BODY_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 1024 * 1024,
    doc: 'Larger request bodies are answered 413.',
  }),
  trustProxy: setting({
    env: 'TASKHOOK_TRUST_PROXY',
    schema: Type.Union([Type.Boolean(), Type.Integer({ minimum: 0 }), Type.Array(Type.String())]),
    default: false,
    parse: parseTrustProxy,
    doc: 'Which proxies to believe about the client address (`X-Forwarded-For`, read only then): `false`, `true` (any), a hop count (that many proxies in front), or comma-separated proxy addresses/CIDRs such as `127.0.0.1,10.0.0.0/8`.',
  }),
  logLevel: setting({
    env: 'TASKHOOK_LOG_LEVEL',
    schema: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))),
    default: 'info',
    doc: '`fatal` … `trace`, or `silent`. Secrets, passwords and credentials are redacted.',
  }),
  healthIntervalMs: setting({
    env: 'TASKHOOK_HEALTH_INTERVAL_MS',
    schema: Type.Integer({ minimum: 50 }),
    default: 2000,
    doc: 'How often the background health check pings the database.',
  }),
  sweepIntervalMs: setting({
    env: 'TASKHOOK_SWEEP_INTERVAL_MS',
    schema: Type.Integer({ minimum: 10 }),
    default: 1000,
    doc: 'How often expired leases and timeouts are swept, and agents that are a model look for queued work.',
  }),
  callbackTimeoutMs: setting({
    env: 'TASKHOOK_CALLBACK_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 100 }),
    default: 10_000,
    doc: 'How long a callback attempt may take before it counts as failed.',
  }),
  outboundPerAccount: setting({
    env: 'TASKHOOK_OUTBOUND_PER_ACCOUNT',
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    default: 16,
    doc: "Outbound requests of one account in flight at once on one instance, per feature (`http` and `a2a` runtimes, callbacks): the rest wait in the account's own queue, so one account never holds more than this many of a feature's 64 connections per destination. A request's deadline counts from the start of its wait.",
  }),
  pushRunsPerAccount: setting({
    env: 'TASKHOOK_PUSH_RUNS_PER_ACCOUNT',
    schema: Type.Integer({ minimum: 1, maximum: 10_000 }),
    default: 32,
    doc: "Tasks of one account's push agents (`openai`, `http`, `a2a`) that one instance runs at once, all its agents together; the rest stay queued until one of its runs ends.",
  }),
  submitsPerAccount: setting({
    env: 'TASKHOOK_SUBMITS_PER_ACCOUNT',
    schema: Type.Integer({ minimum: 1, maximum: 10_000 }),
    default: 100,
    doc: "Submits of one account (`POST /agent/request/:id` and MCP tool calls, all its keys and sessions) that one instance works on at once; the rest wait in the account's own queue, in order. So one account's burst puts at most this many tasks ahead of another account's submit in the database's queue.",
  }),
  a2aMaxWaitSeconds: setting({
    env: 'TASKHOOK_A2A_MAX_WAIT_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 3600 }),
    default: 60,
    doc: 'Agents served over A2A: how long a blocking `SendMessage` waits for the task to finish or ask for input before it answers with the task as it is.',
  }),
  mcp: setting({
    env: 'TASKHOOK_MCP',
    schema: Type.Boolean(),
    default: true,
    doc: 'Serve the MCP endpoint `/mcp` (every agent a tool for MCP clients); `false`: every method on `/mcp` answers 404.',
  }),
  mcpWaitSeconds: setting({
    env: 'TASKHOOK_MCP_WAIT_SECONDS',
    schema: Type.Integer({ minimum: 0, maximum: 3600 }),
    default: 50,
    doc: 'MCP: the longest a waiting tool call holds its answer (the default stays under the 60 s request timeout of common clients).',
  }),
  mcpOauth: setting({
    env: 'TASKHOOK_MCP_OAUTH',
    schema: Type.Boolean(),
    default: true,
    doc: 'MCP: taskhook is the OAuth authorization server of `/mcp` (hosted MCP clients connect through it; docs/mcp.md). `false`: every `/oauth/*` path and the `/.well-known/oauth-*` documents answer 404 and OAuth tokens are refused.',
  }),
  mcpOauthDcr: setting({
    env: 'TASKHOOK_MCP_OAUTH_DCR',
    schema: Type.Boolean(),
    default: true,
    doc: 'MCP OAuth: Dynamic Client Registration (`POST /oauth/register`) for clients without a Client ID Metadata Document; `false`: 404.',
  }),
  mcpOauthAccessTtlSeconds: setting({
    env: 'TASKHOOK_MCP_OAUTH_ACCESS_TTL_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 86_400 }),
    default: 3600,
    doc: 'MCP OAuth: access token lifetime (`expires_in`).',
  }),
  mcpOauthRefreshTtlSeconds: setting({
    env: 'TASKHOOK_MCP_OAUTH_REFRESH_TTL_SECONDS',
    schema: Type.Integer({ minimum: 60, maximum: 31_536_000 }),
    default: 2_592_000,
    doc: 'MCP OAuth: lifetime of each refresh token from its issue (30 days); each refresh issues a new one.',
  }),
  mcpOauthCodeTtlSeconds: setting({
    env: 'TASKHOOK_MCP_OAUTH_CODE_TTL_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 600 }),
    default: 60,
    doc: 'MCP OAuth: authorization code lifetime.',
  }),
  headersTimeoutMs: setting({
    env: 'TASKHOOK_HEADERS_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 100 }),
    default: 10_000,
    doc: 'A client that has not sent its complete request headers by then is disconnected (408).',
  }),
  requestTimeoutMs: setting({
    env: 'TASKHOOK_REQUEST_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 100 }),
    default: 30_000,
    doc: 'A client that has not sent its complete request (headers and body) by then is disconnected (408). Responses (long polls, event streams) are not limited by it.',
  }),
  shutdownTimeoutMs: setting({
    env: 'TASKHOOK_SHUTDOWN_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 100 }),
    default: 30_000,
    doc: 'On SIGTERM or SIGINT, how long in-flight work may take before the process exits anyway (exit code 1).',
  }),
  heapGrowingPercent: setting({
    env: 'TASKHOOK_HEAP_GROWING_PERCENT',
    schema: Type.Integer({ minimum: 0, maximum: 300 }),
    default: 25,
    doc: "How far V8 lets the JavaScript heap grow past what the last full collection kept before it collects again, in percent (0: V8's own choice, which lets garbage from bursts such as large telemetry exports pile up to several hundred MB before a collection). Set by `serve`.",
  }),
  retentionDays: setting({
    env: 'TASKHOOK_RETENTION_DAYS',
    schema: Type.Integer({ minimum: 1 }),
    default: 30,
    doc: 'Finished tasks (with their events and callback deliveries) and trigger deliveries older than this are deleted in the background. Idempotency keys always expire after 24 hours.',
  }),
  housekeepingIntervalMs: setting({
    env: 'TASKHOOK_HOUSEKEEPING_INTERVAL_MS',
    schema: Type.Integer({ minimum: 1000 }),
    default: 60_000,
    doc: 'How often old rows (tasks, deliveries, expired keys, telemetry, model calls) are looked for (one instance at a time on PostgreSQL).',
  }),
  ...DATABASE_SETTINGS,
  corsOrigins: setting({
    env: 'TASKHOOK_CORS_ORIGINS',
    schema: Type.Array(Type.String()),
    default: [],
    defaultText: 'unset',
    parse: parseOrigins,
    doc: 'Comma-separated browser origins (`https://app.example.com`, or `*`) allowed to call the API from another origin: CORS on every path, preflight included; credentials travel only in headers.',
  }),
  ...OAUTH_SETTINGS,
  ...OBSERVABILITY_SETTINGS,
  auditRetentionDays: setting({
    env: 'TASKHOOK_AUDIT_RETENTION_DAYS',
    schema: Type.Integer({ minimum: 1, maximum: 3650 }),
    default: 365,
    doc: 'Audit log entries older than this are never returned and are deleted by housekeeping (every TASKHOOK_HOUSEKEEPING_INTERVAL_MS).',
  }),
  modelPricesFile: setting({
    env: 'TASKHOOK_MODEL_PRICES_FILE',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    doc: 'JSON file of model prices laid over the shipped table: `{"gpt-4o": {"input": 2.5, "output": 10}}` in US dollars per million tokens. A model is priced by its own entry, else by the entry of its name without one snapshot suffix (-YYYY-MM-DD, -YYYYMMDD, four digits, -latest), else by the longest family key ending in `*` that starts it (`"acme-ft-*"`; the shipped table has none), else by the same steps on the part after its last `/`. A malformed file, or a key that is `*` alone or has `*` before its end, stops the server at start.',
  }),
  unverifiedTtlHours: setting({
    env: 'TASKHOOK_UNVERIFIED_TTL_HOURS',
    schema: Type.Integer({ minimum: 1, maximum: 720 }),
    default: 24,
    doc: 'An account whose e-mail is not verified is deleted this many hours after its last registration (the address is free again; registering it again before then replaces the pending registration).',
  }),
  invitationTtlSeconds: setting({
    env: 'TASKHOOK_INVITATION_TTL_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 2_592_000 }),
    default: 604_800,
    doc: 'Lifetime of an invitation to a workspace (7 days by default, at most 30).',
  }),
  maxWorkspacesPerUser: setting({
    env: 'TASKHOOK_MAX_WORKSPACES_PER_USER',
    schema: Type.Integer({ minimum: 0, maximum: 100 }),
    default: 10,
    doc: 'Most workspaces a user may own (hold the owner role in) besides their personal one; creating, being made owner of, or accepting an owner invitation to one more is refused.',
  }),
  scheduleMinIntervalSeconds: setting({
    env: 'TASKHOOK_SCHEDULE_MIN_INTERVAL_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 3600 }),
    default: 60,
    doc: 'The smallest gap allowed between the times of day a schedule pattern names (its hour, minute and second fields, day after day); a pattern with a smaller gap is refused.',
  }),
  maxSchedulesPerWorkspace: setting({
    env: 'TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE',
    schema: Type.Integer({ minimum: 1, maximum: 100_000 }),
    default: 1000,
    doc: 'Most schedules a workspace holds, enabled or not, over all its agents (1–100000); a create beyond it is refused.',
  }),
  dashboard: setting({
    env: 'TASKHOOK_DASHBOARD',
    schema: Type.Boolean(),
    default: true,
    doc: 'Serve the dashboard at `/dashboard/`; `false` answers 404 there.',
  }),
  metrics: setting({
    env: 'TASKHOOK_METRICS',
    schema: Type.Boolean(),
    default: false,
    doc: 'Serve Prometheus metrics at `GET /metrics` on the API port, without authentication.',
  }),
  metricsPort: setting({
    env: 'TASKHOOK_METRICS_PORT',
    schema: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    doc: 'Serve `GET /metrics` on this port of `HOST` instead (keep it off the public network).',
  }),
};

export type Settings = typeof SETTINGS;
export type SettingKey = keyof Settings;
