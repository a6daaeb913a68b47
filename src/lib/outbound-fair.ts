import { Dispatcher } from 'undici';

/**
 * Per-account lanes in front of one shared undici dispatcher, so that one account cannot fill the
 * pool every account sends through.
 *
 * Why not the dispatcher alone: undici keeps at most `connections` sockets per origin and queues
 * the rest, and a request waiting in that queue does not leave it when its abort signal fires (it
 * learns of the abort only once it is given a socket). An account with 64 hanging requests to one
 * origin therefore held every socket, and every other account's request to that origin waited
 * behind them however short its own deadline. Here each account has at most `perAccount` requests
 * handed to the shared dispatcher; the rest wait in the account's own queue. A request's deadline
 * (its abort signal, a timer of ours) ends it wherever it is: in the account's queue, in undici's
 * queue before any socket (the caller is answered at once and the request is dropped as soon as
 * undici hands it a socket), or on its socket. The account's slot is given back only when undici
 * is done with the request, so what an account has inside the shared pool never exceeds its cap.
 */

/** What a fair pool holds right now (all accounts together: per-account labels would not scale). */
export interface FairOutboundStats {
  /** Requests handed to the shared dispatcher and not yet finished. */
  inFlight: number;
  /** Requests waiting in their account's queue. */
  queued: number;
}

export interface FairOutbound {
  /**
   * The dispatcher for one account's requests (pass it as undici's `dispatcher`, to `request` or
   * `fetch`): at most `perAccount` of that account's requests are in the shared pool at once.
   */
  forAccount(account: string): Dispatcher;
  stats(): FairOutboundStats;
  /** Closes the shared dispatcher. */
  close(): Promise<void>;
}

type Handler = Dispatcher.DispatchHandler;
type AbortFn = (reason?: Error) => void;

interface Lane {
  active: number;
  queue: Array<() => void>;
}

/** An undici dispatcher that only admits requests through `admit`. */
class AccountDispatcher extends Dispatcher {
  constructor(private readonly admit: (opts: Dispatcher.DispatchOptions, handler: Handler) => void) {
    super();
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
    this.admit(opts, handler);
    return true;
  }
}

/** The caller's abort signal: undici's `request` passes its options, `signal` included, to `dispatch`. */
const signalOf = (request: Dispatcher.DispatchOptions) => {
  const signal = (request as { signal?: unknown }).signal;
  return signal instanceof AbortSignal ? signal : undefined;
};

const abortReason = (signal: AbortSignal) =>
  signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

/**
 * Per-account lanes over `dispatcher` (normally the guarded one of `createOutboundDispatcher`, so
 * every request still passes the SSRF guard), each with at most `perAccount` requests in flight.
 */
export function createFairOutbound(opts: { dispatcher: Dispatcher; perAccount: number }): FairOutbound {
  const lanes = new Map<string, Lane>();
  let inFlight = 0;
  let queued = 0;

  function release(account: string, lane: Lane) {
    inFlight--;
    const next = lane.queue.shift();
    if (next) {
      queued--;
      next();
      return;
    }
    lane.active--;
    if (lane.active === 0) lanes.delete(account);
  }

  /** Hands one request to the shared dispatcher; its slot is released once undici is done with it. */
  function send(account: string, lane: Lane, request: Dispatcher.DispatchOptions, handler: Handler) {
    const signal = signalOf(request);
    let connected = false;
    let answered = false; // the caller was told the outcome (by us, on a deadline before any socket)
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      signal?.removeEventListener('abort', onAbort);
      release(account, lane);
    };
    // undici's RequestHandler ignores an abort until it has a socket: answer the caller now.
    const onAbort = () => {
      if (connected || answered || !signal) return;
      answered = true;
      handler.onError?.(abortReason(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const wrapped: Handler = {
      onConnect(abort: AbortFn, context?: object) {
        connected = true;
        if (answered && signal) return abort(abortReason(signal));
        return (handler.onConnect as (abort: AbortFn, context?: object) => void)?.(abort, context);
      },
      onResponseStarted: () => (answered ? undefined : handler.onResponseStarted?.()),
      onHeaders: (status, headers, resume, text) =>
        answered ? false : (handler.onHeaders?.(status, headers, resume, text) ?? true),
      onUpgrade: (status, headers, socket) => (answered ? undefined : handler.onUpgrade?.(status, headers, socket)),
      onData: (chunk) => (answered ? false : (handler.onData?.(chunk) ?? true)),
      onComplete(trailers) {
        done();
        if (!answered) handler.onComplete?.(trailers);
      },
      onError(err) {
        done();
        if (!answered) handler.onError?.(err);
      },
    };
    try {
      opts.dispatcher.dispatch(request, wrapped);
    } catch (err) {
      done();
      if (!answered) handler.onError?.(err as Error);
    }
  }

  function admit(account: string, request: Dispatcher.DispatchOptions, handler: Handler) {
    const signal = signalOf(request);
    if (signal?.aborted) {
      queueMicrotask(() => handler.onError?.(abortReason(signal)));
      return;
    }
    let lane = lanes.get(account);
    if (!lane) {
      lane = { active: 0, queue: [] };
      lanes.set(account, lane);
    }
    const own = lane;
    if (own.active < opts.perAccount) {
      own.active++;
      inFlight++;
      send(account, own, request, handler);
      return;
    }
    // Waits for a slot of its own account; a deadline that fires first takes it out of the queue.
    const turn = () => {
      signal?.removeEventListener('abort', leave);
      inFlight++;
      send(account, own, request, handler);
    };
    const leave = () => {
      const at = own.queue.indexOf(turn);
      if (at < 0) return;
      own.queue.splice(at, 1);
      queued--;
      if (own.active === 0 && own.queue.length === 0) lanes.delete(account);
      handler.onError?.(abortReason(signal as AbortSignal));
    };
    signal?.addEventListener('abort', leave, { once: true });
    own.queue.push(turn);
    queued++;
  }

  return {
    forAccount: (account) => new AccountDispatcher((request, handler) => admit(account, request, handler)),
    stats: () => ({ inFlight, queued }),
    close: () => opts.dispatcher.close(),
  };
}
