import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import { AppError } from '../../http/errors.js';
import { createSemaphore } from '../../lib/semaphore.js';

// argon2id at OWASP's minimum: m = 19 MiB, t = 2, p = 1. (2 is Algorithm.Argon2id; the
// package declares it as an ambient const enum, which isolated modules cannot import.)
const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** The argon2 primitives (the real ones unless a test instruments them). */
export interface Argon2 {
  hash(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<boolean>;
}

const argon2: Argon2 = {
  hash: (password) => hash(password, OPTIONS as Parameters<typeof hash>[1]),
  verify: (stored, password) => verify(stored, password),
};

/** At most this many hashes run at once by default (they are CPU-bound). */
export const DEFAULT_HASH_CONCURRENCY = 2 * availableParallelism();
/** How long a hash may wait for its turn before the request is refused. */
export const DEFAULT_HASH_WAIT_MS = 5000;

/**
 * Password hashing with a bound: at most `concurrency` argon2 hashes or verifications run at once,
 * so a flood of logins cannot take every CPU (and libuv thread) from other work; the rest wait in
 * order, at most `maxWaitMs`.
 */
export function createPasswordHasher(opts: { concurrency?: number; maxWaitMs?: number; argon2?: Argon2 } = {}) {
  const slots = createSemaphore(opts.concurrency ?? DEFAULT_HASH_CONCURRENCY);
  const maxWaitMs = opts.maxWaitMs ?? DEFAULT_HASH_WAIT_MS;
  const primitives = opts.argon2 ?? argon2;
  let dummyHash: Promise<string> | undefined;

  /** @throws AppError 503 SERVICE_UNAVAILABLE when no slot frees within `maxWaitMs`. */
  async function bounded<T>(work: () => Promise<T>): Promise<T> {
    if (!(await slots.acquire(maxWaitMs))) {
      throw new AppError('SERVICE_UNAVAILABLE', 'Too many password checks at once: try again in a moment');
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
     * @throws AppError 503 SERVICE_UNAVAILABLE when the hashing slots stay full.
     */
    hash: (password: string): Promise<string> => bounded(() => primitives.hash(password)),

    /**
     * Checks a password against a stored hash. With no hash (unknown user) it still spends the time
     * of one verification, so response time does not reveal which e-mails have accounts.
     * @throws AppError 503 SERVICE_UNAVAILABLE when the hashing slots stay full.
     */
    async check(stored: string | undefined, password: string): Promise<boolean> {
      if (stored === undefined) {
        dummyHash ??= primitives.hash('taskhook-timing-equaliser');
        const equaliser = await dummyHash;
        await bounded(() => primitives.verify(equaliser, password).catch(() => false));
        return false;
      }
      return bounded(() => primitives.verify(stored, password).catch(() => false));
    },

    /** Hashes running and waiting now. */
    load: () => ({ active: slots.active, waiting: slots.waiting }),
  };
}

export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
