import pg from 'pg';
import { statementName } from './prepared.js';

export interface PgPoolOptions {
  /** Connections in the pool. */
  poolSize: number;
  /** An idle connection is closed after this long; 0 keeps idle connections open. */
  idleTimeoutMs: number;
  /** PostgreSQL's statement_timeout for every statement; 0 means none. */
  statementTimeoutMs: number;
  /** Run hot queries as named prepared statements (off behind a pooler in transaction mode). */
  preparedStatements: boolean;
  onError?: ((err: Error) => void) | undefined;
}

type Query = (text: unknown, values?: unknown, callback?: unknown) => Promise<pg.QueryResult> | undefined;
interface PgConnection {
  parsedStatements: Record<string, string>;
}

const STALE_PLAN = 'cached plan must not change result type';

/**
 * The pg pool behind Kysely. Every acknowledged write is durable (synchronous_commit=on whatever
 * the server's default). With preparedStatements, a query whose SQL text is registered in
 * prepared.ts is sent as a named statement: PostgreSQL parses and plans it once per connection.
 */
export function createPgPool(url: string, opts: PgPoolOptions): pg.Pool {
  const settings = ['-c synchronous_commit=on'];
  if (opts.statementTimeoutMs > 0) settings.push(`-c statement_timeout=${opts.statementTimeoutMs}`);
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize,
    idleTimeoutMillis: opts.idleTimeoutMs,
    connectionTimeoutMillis: 5000,
    options: settings.join(' '),
  });
  pool.on('error', (err) => opts.onError?.(err));
  pool.on('connect', (client) => {
    // pg emits 'error' on a checked-out client whose connection drops between queries, and the pool
    // only listens while the client is idle: without this listener that error crashes the process.
    client.on('error', (err) => opts.onError?.(err));
    if (opts.preparedStatements) nameHotQueries(client);
  });
  return pool;
}

/**
 * Replaces the client's query method so registered SQL goes out as a named statement. A schema
 * change by another instance (a migration adding a column to a table read with `select *`) makes
 * PostgreSQL refuse a statement prepared before it: the statement is then deallocated and, outside
 * a transaction, the query retried at once; inside one, the transaction fails and the next use
 * prepares it anew.
 */
function nameHotQueries(client: pg.PoolClient): void {
  const original = client.query.bind(client) as unknown as Query;
  const connection = (client as unknown as { connection: PgConnection }).connection;
  const stale = new Set<string>();
  let inTransaction = false;

  async function deallocate(name: string): Promise<void> {
    stale.delete(name);
    await original(`deallocate ${name}`);
    delete connection.parsedStatements[name];
  }

  async function runNamed(name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
    if (stale.has(name) && !inTransaction) await deallocate(name);
    try {
      return (await original({ name, text, values })) as pg.QueryResult;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.includes(STALE_PLAN)) throw err;
      stale.add(name);
      if (inTransaction) throw err;
      await deallocate(name);
      return (await original({ name, text, values })) as pg.QueryResult;
    }
  }

  const query: Query = (text, values, callback) => {
    if (typeof text === 'string' && callback === undefined) {
      const name = statementName(text);
      if (name && Array.isArray(values)) return runNamed(name, text, values);
      trackTransaction(text);
    }
    return original(text, values, callback);
  };
  function trackTransaction(text: string) {
    const head = text.slice(0, 16).toLowerCase();
    if (head.startsWith('begin') || head.startsWith('start transaction')) inTransaction = true;
    else if (head === 'commit' || head === 'rollback') inTransaction = false;
  }
  (client as unknown as { query: Query }).query = query;
}
