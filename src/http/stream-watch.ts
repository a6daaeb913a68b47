import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CredentialCheck, Principal, Role } from '../lib/principal.js';
import type { Timers } from '../lib/time.js';

/** A comment line goes out this often on every stream, and the stream's credential is checked again. */
export const HEARTBEAT_MS = 15_000;

/**
 * What every long-lived stream does besides its own events: a comment line every HEARTBEAT_MS
 * (`heartbeat`), and its credential checked again then and at once when this instance hears the
 * user's credentials changed; `end` is called once the credential no longer holds (revoked,
 * expired, password changed, agents feature lost, access to the workspace or the role lost). A failed check (database trouble) leaves the
 * stream open until the next one; a check asked for during another runs after it, since the one
 * running may have read the credential before the change. Returns the function that stops it all.
 */
export function watchStream(deps: {
  credentials: CredentialCheck;
  timers: Timers;
  request: FastifyRequest;
  principal: Principal;
  /** The least role the connection needs in its workspace (default viewer: reading). */
  needed?: Role;
  heartbeat: () => void;
  end: () => void;
}): () => void {
  let stopped = false;
  let checking = false;
  let checkAgain = false;
  const recheck = () => {
    if (stopped) return;
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = true;
    checkAgain = false;
    deps.credentials
      .stillValid(deps.request.headers, deps.principal, deps.needed)
      .then((valid) => {
        if (!valid && !stopped) deps.end();
      })
      .catch((err) => deps.request.log.warn({ err }, 'stream credential check failed'))
      .finally(() => {
        checking = false;
        if (checkAgain) recheck();
      });
  };
  const stopTicks = deps.timers.every(HEARTBEAT_MS, () => {
    if (stopped) return;
    deps.heartbeat();
    recheck();
  });
  const stopListening = deps.credentials.onChange((userUuid) => {
    if (userUuid === deps.principal.userUuid) recheck();
  });
  return () => {
    stopped = true;
    stopTicks();
    stopListening();
  };
}

/** An open server-sent event stream (see `startEventStream`). */
export interface EventStream {
  raw: ServerResponse;
  /** True once `end` ran (the client hung up, the credential stopped holding, the app closes). */
  readonly closed: boolean;
  end(): void;
}

/**
 * Takes the response over from Fastify and starts a server-sent event stream: status 200 with
 * the headers set so far (X-Request-Id, rate-limit, CORS) and those of an unbuffered event
 * stream, sent at once (a stream may have nothing to write for a while); then the heartbeat and
 * credential watch of `watchStream`. The stream ends once, whatever ends it first: the client
 * hanging up, the credential, `end()`, or the app closing (`open` holds every open stream's end);
 * `onEnd` runs then, before the response is ended.
 */
export function startEventStream(
  reply: FastifyReply,
  deps: Omit<Parameters<typeof watchStream>[0], 'heartbeat' | 'end'> & {
    open: Set<() => void>;
    onEnd: () => void;
  },
): EventStream {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();
  let closed = false;
  const end = () => {
    if (closed) return;
    closed = true;
    stopWatching();
    deps.open.delete(end);
    deps.onEnd();
    raw.end();
  };
  const stopWatching = watchStream({ ...deps, heartbeat: () => raw.write(': keep-alive\n\n'), end });
  deps.open.add(end);
  raw.on('close', end);
  return {
    raw,
    get closed() {
      return closed;
    },
    end,
  };
}
