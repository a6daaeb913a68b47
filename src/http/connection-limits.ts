import { AppError } from './errors.js';

/** What a user holds open: an SSE stream, or a request parked waiting for work (long poll, blocking send). */
export type ConnectionKind = 'stream' | 'wait';

/** At most this many of each kind per user, on each instance. */
export const CONNECTION_LIMITS: Readonly<Record<ConnectionKind, number>> = { stream: 50, wait: 100 };

const WHAT: Record<ConnectionKind, string> = { stream: 'open event streams', wait: 'waiting requests' };

/**
 * Counts what each user holds open on this instance. A count lives in the process that holds the
 * sockets, so it cannot leak when another instance dies, and it bounds what it protects (this
 * instance's sockets, memory and wake-ups). Behind a load balancer a user may hold the limit on
 * each instance.
 */
export function createConnectionLimits(limits: Readonly<Record<ConnectionKind, number>> = CONNECTION_LIMITS) {
  const counts = new Map<string, number>();

  return {
    /**
     * Takes one slot of `kind` for the user; call the returned function (once; later calls do
     * nothing) when the stream or wait ends.
     * @throws AppError 429 LIMIT_EXCEEDED when the user already holds the limit.
     */
    acquire(userUuid: string, kind: ConnectionKind): () => void {
      const key = `${kind}:${userUuid}`;
      const held = counts.get(key) ?? 0;
      if (held >= limits[kind]) {
        const message = `At most ${limits[kind]} ${WHAT[kind]} per user at once: close one first`;
        throw new AppError('LIMIT_EXCEEDED', message, undefined, 429);
      }
      counts.set(key, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left > 0) counts.set(key, left);
        else counts.delete(key);
      };
    },
    /** How many of `kind` the user holds now. */
    held: (userUuid: string, kind: ConnectionKind): number => counts.get(`${kind}:${userUuid}`) ?? 0,
  };
}

export type ConnectionLimits = ReturnType<typeof createConnectionLimits>;
