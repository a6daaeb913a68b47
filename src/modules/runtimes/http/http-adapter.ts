import { definePushAdapter } from '../push-adapter.js';
import { checkRuntimeUrl } from '../runtime-check.js';
import { createHttpRuntime } from './http-runtime.js';
import { DEFAULT_LEASE_SECONDS } from './http-runtime-fns.js';
import { HttpRuntimeSchema } from './http-schema.js';

/** The longest an http agent may take to answer (timeout_seconds is at most 300). */
const HTTP_MAX_TIMEOUT_MS = 300_000;

/** The `http` push runtime: signed POSTs through the feature's guarded pool, a lane per account. */
export const httpAdapter = definePushAdapter({
  schema: HttpRuntimeSchema,
  check: ({ policy }, _workspaceUuid, runtime) => checkRuntimeUrl('runtime.url', runtime.url, policy),
  // Also the lease after its 202, so a crashed instance's push comes back as soon as an abandoned 202 would.
  leaseSeconds: (runtime) => runtime.lease_seconds ?? DEFAULT_LEASE_SECONDS,
  build: ({ config, deps, accounts, lanes }) =>
    createHttpRuntime({
      signingSecrets: (workspaceUuid) => accounts.activeSigningSecrets(workspaceUuid),
      outbound: lanes('http', HTTP_MAX_TIMEOUT_MS),
      allowPrivate: config.allowPrivateUrls,
      publicUrl: config.publicUrl,
      maxAnswerBytes: config.maxBodyBytes,
      now: () => deps.clock.now(),
    }),
});
