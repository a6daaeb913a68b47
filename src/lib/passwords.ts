import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import { createSemaphore } from './semaphore.js';

// argon2id at OWASP's minimum: m = 19 MiB, t = 2, p = 1. (2 is Algorithm.Argon2id; the
// package declares it as an ambient const enum, which isolated modules cannot import.)
const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** The argon2 primitives (the real ones unless a test instruments them). */
export interface Argon2 {
  hash(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<boolean>;
}

/** The real argon2id primitives with the options above. */
export const argon2id: Argon2 = {
  hash: (password) => hash(password, OPTIONS as Parameters<typeof hash>[1]),
  verify: (stored, password) => verify(stored, password),
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

/** Weight of the newest hash in the running average of how long one takes. */
const DURATION_WEIGHT = 0.2;

/**
 * The wait a newcomer can expect behind `waiting` others for one of `concurrency` slots, when each
 * hash takes `averageMs`: the queue drains `concurrency` at a time. Null before any hash finished.
 */
export function expectedWaitMs(waiting: number, concurrency: number, averageMs: number | null): number | null {
  if (averageMs === null) return null;
  return Math.ceil((waiting + 1) / concurrency) * averageMs;
}

/**
 * Password hashing with a bound: at most `concurrency` argon2 hashes or verifications run at once,
 * so a flood of logins cannot take every CPU (and libuv thread) from other work; the rest wait in
 * order, at most `maxWaitMs`. A newcomer whose expected wait (the queue ahead of it times the
 * running average of one hash) already exceeds `maxWaitMs` is refused at once: refusals then come
 * one by one as the queue is full, not as a herd when the waiters that queued together all time
 * out in the same tick (and their clients all send again).
 */
export function createPasswordHasher(opts: { concurrency?: number; maxWaitMs?: number; argon2?: Argon2 } = {}) {
  const concurrency = opts.concurrency ?? DEFAULT_HASH_CONCURRENCY;
  const slots = createSemaphore(concurrency);
  const maxWaitMs = opts.maxWaitMs ?? DEFAULT_HASH_WAIT_MS;
  const primitives = opts.argon2 ?? argon2id;
  let averageMs: number | null = null;

  /** @throws HashingBusyError when the wait is expected to exceed `maxWaitMs`, or no slot frees within it. */
  async function bounded<T>(work: () => Promise<T>): Promise<T> {
    if (slots.active >= concurrency) {
      const expected = expectedWaitMs(slots.waiting, concurrency, averageMs);
      if (expected !== null && expected > maxWaitMs) throw new HashingBusyError();
    }
    if (!(await slots.acquire(maxWaitMs))) {
      throw new HashingBusyError();
    }
    const startedAt = performance.now();
    try {
      return await work();
    } finally {
      const took = performance.now() - startedAt;
      averageMs = averageMs === null ? took : averageMs + DURATION_WEIGHT * (took - averageMs);
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
