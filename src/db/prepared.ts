import { type Compilable, CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from './database.js';
import { assertOutsideTransaction } from './transactions.js';

type Executor = Kysely<Database> | Transaction<Database>;

interface Compiled {
  sql: string;
  /** A plain SELECT: safe to run on a read-only connection. */
  select: boolean;
  /** For each SQL parameter, the index of the argument that fills it, or -1 for a constant. */
  slots: number[];
  constants: readonly unknown[];
}

const sentinel = (i: number) => `\u0000taskhook-arg-${i}\u0000`;

/**
 * SQL texts run as named prepared statements on PostgreSQL (see connect.ts): parsed and planned
 * once per connection instead of on every call. Only hot queries built once are registered, so
 * the set is small and fixed: each connection keeps at most this many statements.
 */
const namedStatements = new Map<string, string>();

/**
 * A synchronous reader for a database handle's own queries outside any transaction (SQLite: a
 * second connection that sees only committed data and never waits for the writer). Keyed by the
 * root Kysely instance, so a transaction's executor never reads through it.
 */
export type DirectReader = (sql: string, parameters: readonly unknown[]) => unknown[];
const readers = new WeakMap<object, DirectReader>();

/** Registers the reader that prepared SELECTs on `kysely` (not in a transaction) use. */
export function registerDirectReader(kysely: object, reader: DirectReader): void {
  readers.set(kysely, reader);
}
const MAX_NAMED = 200;

/** Marks an SQL text as a hot query to prepare once per PostgreSQL connection. */
export function registerNamedStatement(text: string): void {
  if (namedStatements.has(text) || namedStatements.size >= MAX_NAMED) return;
  namedStatements.set(text, `taskhook_${namedStatements.size + 1}`);
}

/** The prepared statement name of a registered SQL text, if any. */
export function statementName(text: string): string | undefined {
  return namedStatements.get(text);
}

/**
 * A query built with Kysely once per dialect and then run with new arguments, skipping the
 * query builder on hot paths (building a query costs more than running it on SQLite).
 * `build` is called once with placeholder arguments; each argument must be used as a plain
 * value (compared, inserted), never inspected, so its position in the SQL is the same for any value.
 * On PostgreSQL the statement is also prepared once per connection (registerNamedStatement).
 */
export function prepareQuery<Args extends unknown[], Row>(
  arity: number,
  build: (ex: Executor, ...args: Args) => Compilable<Row>,
) {
  const byAdapter = new WeakMap<object, Compiled>();
  return async function run(ex: Executor, ...args: Args): Promise<Row[]> {
    const adapter = ex.getExecutor().adapter;
    let compiled = byAdapter.get(adapter);
    if (!compiled) {
      const placeholders = Array.from({ length: arity }, (_, i) => sentinel(i)) as Args;
      const query = build(ex, ...placeholders).compile();
      compiled = {
        sql: query.sql,
        select: /^\s*select\s/i.test(query.sql),
        slots: query.parameters.map((p) => (typeof p === 'string' ? placeholders.indexOf(p) : -1)),
        constants: query.parameters,
      };
      byAdapter.set(adapter, compiled);
      registerNamedStatement(compiled.sql);
    }
    const { slots, constants } = compiled;
    const parameters = slots.map((slot, i) => (slot >= 0 ? args[slot] : constants[i]));
    if (compiled.select) {
      const reader = readers.get(ex);
      if (reader) {
        // The reader sees only committed rows: inside a transaction that is the same mistake as
        // any other root-handle query, and the tests' check must catch it here too.
        assertOutsideTransaction();
        return reader(compiled.sql, parameters) as Row[];
      }
    }
    const result = await ex.executeQuery<Row>(CompiledQuery.raw(compiled.sql, parameters));
    return result.rows;
  };
}
