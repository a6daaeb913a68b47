import type { FastifyRequest } from 'fastify';
import type { Principal } from '../lib/principal.js';
import type { Timers } from '../lib/time.js';
import type { CredentialCheck } from '../modules/accounts/accounts-module.js';

/** A comment line goes out this often on every stream, and the stream's credential is checked again. */
export const HEARTBEAT_MS = 15_000;

/**
 * What every long-lived stream does besides its own events: a comment line every HEARTBEAT_MS
 * (`heartbeat`), and its credential checked again then and at once when this instance hears the
 * user's credentials changed; `end` is called once the credential no longer holds (revoked,
 * expired, password changed, agents feature lost). A failed check (database trouble) leaves the
 * stream open until the next one; a check asked for during another runs after it, since the one
 * running may have read the credential before the change. Returns the function that stops it all.
 */
export function watchStream(deps: {
  credentials: CredentialCheck;
  timers: Timers;
  request: FastifyRequest;
  principal: Principal;
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
      .stillValid(deps.request.headers, deps.principal)
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
