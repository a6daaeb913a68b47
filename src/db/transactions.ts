import { AsyncLocalStorage } from 'node:async_hooks';
import { type Driver, type Kysely, type Dialect as KyselyDialect, SqliteAdapter, type Transaction } from 'kysely';
import type { Database } from './database.js';

/** What repo methods take as their first argument: the database or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

type Hook = () => void;
type WriteHook = () => Promise<void>;

/**
 * Work waiting for the commit of the transaction it was scheduled in, by the executor that
 * transaction's function was given. Each function of a group commit gets its own executor
 * (see `scoped`), so a function rolled back to its savepoint drops only its own work.
 */
const pending = new WeakMap<Executor, Hook[]>();

/** Writes waiting for the end of the function of the transaction they were scheduled in (see `beforeCommit`). */
const finishing = new WeakMap<Executor, WriteHook[]>();

/** Set while a transaction's function runs, when the root-handle check is on (see `checkedDialect`). */
const insideTransaction = new AsyncLocalStorage<true>();
let checking = false;

/**
 * Runs `hook` once the transaction of `trx` has committed (and is durable); never when it
 * rolls back. Wake-ups, stream events and callback nudges go here, so nobody is told of a
 * change that is not there yet, or never will be.
 * @throws Error when `trx` is not the executor of an open `db.transaction` (a programming error).
 */
export function afterCommit(trx: Executor, hook: Hook): void {
  const queue = pending.get(trx);
  if (!queue) throw new Error('afterCommit needs the executor given to a db.transaction function');
  queue.push(hook);
}

/**
 * Runs `hook` in the transaction of `trx` once its function has returned, just before the
 * commit (in a group commit, before its savepoint is released), with the same executor. For a
 * write that must be the transaction's last statement: one that takes a lock nothing after it
 * waits behind (the agent's task event counter), held only for the commit. Hooks run in the order
 * they were scheduled; one that throws rolls the transaction back like its function would.
 * @throws Error when `trx` is not the executor of an open `db.transaction` (a programming error).
 */
export function beforeCommit(trx: Executor, hook: WriteHook): void {
  const queue = finishing.get(trx);
  if (!queue) throw new Error('beforeCommit needs the executor given to a db.transaction function');
  queue.push(hook);
}

/**
 * Runs a transaction's function with an executor of its own that carries its after-commit queue.
 * Returns the function's value and the hooks to run once the enclosing transaction commits.
 */
export async function scoped<T>(
  trx: Transaction<Database>,
  fn: (trx: Executor) => Promise<T>,
): Promise<{ value: T; hooks: Hook[] }> {
  // A distinct Transaction object on the same connection: the key of this function's queue.
  const own = trx.withoutPlugins();
  const hooks: Hook[] = [];
  const writes: WriteHook[] = [];
  pending.set(own, hooks);
  finishing.set(own, writes);
  const run = async () => {
    const value = await fn(own);
    // A hook may schedule another (it is then run too, after it).
    for (let i = 0; i < writes.length; i++) await (writes[i] as WriteHook)();
    return value;
  };
  try {
    const value = checking ? await insideTransaction.run(true, run) : await run();
    return { value, hooks };
  } finally {
    pending.delete(own);
    finishing.delete(own);
  }
}

/** Runs the hooks of a committed transaction. A failing hook must not fail a committed write. */
export function runHooks(hooks: Hook[]): void {
  for (const hook of hooks) {
    try {
      hook();
    } catch {
      // Hooks are wake-up hints; every waiter also re-checks on its own timer.
    }
  }
}

/** A PostgreSQL-style transaction: commit, then the hooks, then the caller's answer. */
export async function runTransaction<T>(kysely: Kysely<Database>, fn: (trx: Executor) => Promise<T>): Promise<T> {
  const { value, hooks } = await kysely.transaction().execute((trx) => scoped(trx, fn));
  runHooks(hooks);
  return value;
}

/** Thrown when the root handle is used inside a transaction's function. */
export class RootHandleInTransactionError extends Error {
  constructor() {
    super(
      'A query used the root database handle inside a transaction: use the executor the transaction gave ' +
        '(on SQLite the root handle waits for the transaction forever)',
    );
  }
}

/**
 * Wraps a dialect so that a query on the root handle (or a nested transaction) started inside a
 * transaction's function throws at once instead of waiting: on SQLite the transaction holds the
 * only connection, so such a query would hang for ever; on PostgreSQL it would silently read
 * outside the transaction. The check costs an AsyncLocalStorage scope per transaction, so it is
 * switched on where correctness matters more than speed (the tests).
 */
export function checkedDialect(dialect: KyselyDialect): KyselyDialect {
  checking = true;
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: () => checkedDriver(dialect.createDriver()),
  };
}

/** @throws RootHandleInTransactionError inside a transaction's function, when the check is on. */
export function assertOutsideTransaction(): void {
  if (checking && insideTransaction.getStore()) throw new RootHandleInTransactionError();
}

function checkedDriver(driver: Driver): Driver {
  return new Proxy(driver, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (prop !== 'acquireConnection') return value.bind(target);
      return () => {
        if (insideTransaction.getStore()) return Promise.reject(new RootHandleInTransactionError());
        return target.acquireConnection();
      };
    },
  });
}

/**
 * Row locks for a read that a write in the same transaction depends on: `FOR UPDATE` on
 * PostgreSQL (with `skipLocked`, rows another transaction holds are passed over); nothing on
 * SQLite, whose single writer already serialises transactions. `noKeyUpdate` takes `FOR NO KEY
 * UPDATE` instead, for a row whose key the transaction will not change: it still excludes other
 * such locks, but not the `FOR KEY SHARE` that an insert of a row referencing it takes for its
 * foreign key check (an agent's row locked by a claim no longer holds up its submits).
 */
export function lockRows<QB extends { forUpdate(): QB; forNoKeyUpdate(): QB; skipLocked(): QB }>(
  ex: Executor,
  qb: QB,
  opts: { skipLocked?: boolean; noKeyUpdate?: boolean } = {},
): QB {
  if (ex.getExecutor().adapter instanceof SqliteAdapter) return qb;
  const locked = opts.noKeyUpdate ? qb.forNoKeyUpdate() : qb.forUpdate();
  return opts.skipLocked ? locked.skipLocked() : locked;
}
