import type { PushAdapter } from '../push-adapter.js';
import type { PushRuntime } from '../push-runtime.js';
import { createHttpRuntime } from './http-runtime.js';

/** The longest an http agent may take to answer (timeout_seconds is at most 300). */
const HTTP_MAX_TIMEOUT_MS = 300_000;

/** The `http` push runtime: signed POSTs through the feature's guarded pool, a lane per account. */
export const httpAdapter: PushAdapter = ({ config, deps, accounts, lanes }) =>
  createHttpRuntime({
    signingSecrets: (workspaceUuid) => accounts.activeSigningSecrets(workspaceUuid),
    outbound: lanes('http', HTTP_MAX_TIMEOUT_MS),
    allowPrivate: config.allowPrivateUrls,
    publicUrl: config.publicUrl,
    maxAnswerBytes: config.maxBodyBytes,
    now: () => deps.clock.now(),
  }) as PushRuntime<never>;
