import { AppError } from './errors.js';

/**
 * What a workspace holds open (every member's sessions and keys together; a single user's personal
 * workspace is that user): an SSE stream, a request parked waiting for work (long poll, blocking
 * send), or a model proxy call (its upstream connection).
 */
export type ConnectionKind = 'stream' | 'wait' | 'proxy';

/** At most this many of each kind per workspace, on each instance. */
export const CONNECTION_LIMITS: Readonly<Record<ConnectionKind, number>> = { stream: 50, wait: 100, proxy: 32 };

const WHAT: Record<ConnectionKind, string> = {
  stream: 'open event streams',
  wait: 'waiting requests',
  proxy: 'model proxy calls in flight',
};

/**
 * Counts what each workspace holds open on this instance. A count lives in the process that holds the
 * sockets, so it cannot leak when another instance dies, and it bounds what it protects (this
 * instance's sockets, memory and wake-ups). Behind a load balancer a workspace may hold the
 * limit on each instance.
 */
export function createConnectionLimits(overrides: Readonly<Partial<Record<ConnectionKind, number>>> = {}) {
  const limits = { ...CONNECTION_LIMITS, ...overrides };
  const counts = new Map<string, number>();

  return {
    /**
     * Takes one slot of `kind` for the workspace; call the returned function (once; later calls do
     * nothing) when the stream or wait ends.
     * @throws AppError 429 LIMIT_EXCEEDED when the workspace already holds the limit.
     */
    acquire(workspaceUuid: string, kind: ConnectionKind): () => void {
      const key = `${kind}:${workspaceUuid}`;
      const held = counts.get(key) ?? 0;
      if (held >= limits[kind]) {
        const message = `At most ${limits[kind]} ${WHAT[kind]} per workspace at once: close one first`;
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
    held: (workspaceUuid: string, kind: ConnectionKind): number => counts.get(`${kind}:${workspaceUuid}`) ?? 0,
  };
}

export type ConnectionLimits = ReturnType<typeof createConnectionLimits>;

/**
 * Takes a slot of a workspace's open streams or waits (`ConnectionLimits.acquire`, as the protocol
 * servers that park requests need it): returns the function that releases it.
 * @throws AppError LIMIT_EXCEEDED when the workspace holds as many as allowed.
 */
export type AcquireConnection = (workspaceUuid: string, kind: 'stream' | 'wait') => () => void;

/** No cap on waits and streams (a module built without the app's connection limits, in tests). */
export const noConnectionLimits: AcquireConnection = () => () => undefined;
