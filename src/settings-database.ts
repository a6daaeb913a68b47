import { Type } from '@sinclair/typebox';
import { setting } from './settings-fns.js';

/**
 * The PostgreSQL pool and the caches in front of the database (verified credentials, agents, triggers).
 * Spread into `SETTINGS` (settings.ts) at their place in the README's order.
 */
export const DATABASE_SETTINGS = {
  pgPoolSize: setting({
    env: 'TASKHOOK_PG_POOL_SIZE',
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    default: 10,
    doc: 'PostgreSQL connections per instance (plus one for LISTEN).',
  }),
  pgIdleTimeoutMs: setting({
    env: 'TASKHOOK_PG_IDLE_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 0 }),
    default: 10_000,
    doc: 'An idle pooled PostgreSQL connection is closed after this long (0: never).',
  }),
  pgStatementTimeoutMs: setting({
    env: 'TASKHOOK_PG_STATEMENT_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 0 }),
    default: 10_000,
    doc: "PostgreSQL `statement_timeout` of the pool's connections, so no request's query holds a connection for long (0: the server's own setting). Migrations run without it.",
  }),
  pgPreparedStatements: setting({
    env: 'TASKHOOK_PG_PREPARED_STATEMENTS',
    schema: Type.Boolean(),
    default: true,
    doc: 'Send hot queries as named prepared statements (parsed and planned once per connection). Turn off behind a transaction-mode pooler that cannot keep them.',
  }),
  credentialCacheMs: setting({
    env: 'TASKHOOK_CREDENTIAL_CACHE_MS',
    schema: Type.Integer({ minimum: 0, maximum: 60_000 }),
    default: 1000,
    doc: 'How long a verified key or token is remembered. Revocations and password changes reach every instance at once (PostgreSQL: LISTEN/NOTIFY; SQLite: within 100 ms of any other process writing the file); this bounds the rare lost notification. 0: no cache.',
  }),
  agentCacheMs: setting({
    env: 'TASKHOOK_AGENT_CACHE_MS',
    schema: Type.Integer({ minimum: 0, maximum: 60_000 }),
    default: 1000,
    doc: 'How long an agent read by a submit, a webhook delivery, a claim or a batch complete is remembered. Changes and deletions reach every instance at once (PostgreSQL: LISTEN/NOTIFY; SQLite: within 100 ms of any other process writing the file); this bounds the rare lost notification. 0: no cache.',
  }),
  triggerCacheMs: setting({
    env: 'TASKHOOK_TRIGGER_CACHE_MS',
    schema: Type.Integer({ minimum: 0, maximum: 60_000 }),
    default: 1000,
    doc: 'How long a trigger read by a webhook delivery is remembered. Secret rotations, patches (enable/disable) and deletions reach every instance at once (PostgreSQL: LISTEN/NOTIFY; SQLite: within 100 ms of any other process writing the file); this bounds the rare lost notification. 0: no cache.',
  }),
};
