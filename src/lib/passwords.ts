import { availableParallelism } from 'node:os';
import { createArgon2Threads } from './argon2-threads.js';
import { createSemaphore } from './semaphore.js';

// argon2id at OWASP's minimum: m = 19 MiB, t = 2, p = 1. (2 is Algorithm.Argon2id; the
// package declares it as an ambient const enum, which isolated modules cannot import.)
const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** The argon2 primitives (the real ones unless a test instruments them). */
export interface Argon2 {
  hash(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<boolean>;
}

/** The process's hashing threads: one per core, below the event loop's priority (argon2-threads.ts). */
const threads = createArgon2Threads();

/** The real argon2id primitives with the options above, run in the hashing threads. */
export const argon2id: Argon2 = {
  hash: (password) => threads.hash(password, OPTIONS),
  verify: (stored, password) => threads.verify(stored, password),
};

/**
 * What an unknown user's password is checked against: an argon2id hash (same parameters) of a
 * fixed phrase, so the check costs one real verification and needs no hashing of its own.
 */
const EQUALISER_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$MZeGCIwDBuidH1xrAYZrHQ$32n+CIkYm8glWLFXmSYOQp/4eFr+6M1KSSdjAXCdRrk';

/**
 * At most this many hashes run at once by default: one per core. They are CPU-bound, so more
 * threads add no throughput, only contention: with 2 × cores of them runnable the event loop got
 * a fifth of the CPU of a 2-core machine during a login flood instead of a third, and every
 * request it served (the flood's own, a submit) took that much longer.
 */
export const DEFAULT_HASH_CONCURRENCY = availableParallelism();
/** How long a hash may wait for its turn before the request is refused. */
export const DEFAULT_HASH_WAIT_MS = 5000;

/** Every hashing slot stayed taken for the whole wait: the caller answers 503 with Retry-After. */
export class HashingBusyError extends Error {
  constructor() {
    super('Too many password checks at once: try again in a moment');
    this.name = 'HashingBusyError';
  }
}

/**
 * Password hashing with a bound: at most `concurrency` argon2 hashes or verifications run at once,
 * so a flood of logins cannot take every CPU (and libuv thread) from other work; the rest wait in
 * order, at most `maxWaitMs`.
 */
export function createPasswordHasher(opts: { concurrency?: number; maxWaitMs?: number; argon2?: Argon2 } = {}) {
  const slots = createSemaphore(opts.concurrency ?? DEFAULT_HASH_CONCURRENCY);
  const maxWaitMs = opts.maxWaitMs ?? DEFAULT_HASH_WAIT_MS;
  const primitives = opts.argon2 ?? argon2id;

  /** @throws HashingBusyError when no slot frees within `maxWaitMs`. */
  async function bounded<T>(work: () => Promise<T>): Promise<T> {
    if (!(await slots.acquire(maxWaitMs))) {
      throw new HashingBusyError();
    }
    try {
      return await work();
    } finally {
      slots.release();
    }
  }

  return {
    /**
     * An argon2id PHC string for the password.
     * @throws HashingBusyError when the hashing slots stay full.
     */
    hash: (password: string): Promise<string> => bounded(() => primitives.hash(password)),

    /**
     * Checks a password against a stored hash. With no hash (unknown user) it still spends the time
     * of one verification, so response time does not reveal which e-mails have accounts.
     * @throws HashingBusyError when the hashing slots stay full.
     */
    async check(stored: string | undefined, password: string): Promise<boolean> {
      if (stored === undefined) {
        await bounded(() => primitives.verify(EQUALISER_HASH, password).catch(() => false));
        return false;
      }
      return bounded(() => primitives.verify(stored, password).catch(() => false));
    },

    /** Hashes running and waiting now. */
    load: () => ({ active: slots.active, waiting: slots.waiting }),
  };
}

export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
