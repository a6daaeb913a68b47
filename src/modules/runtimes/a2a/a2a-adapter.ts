import { definePushAdapter } from '../push-adapter.js';
import { checkRuntimeUrl } from '../runtime-check.js';
import { createA2aRuntime } from './a2a-runtime.js';
import { A2aRuntimeSchema } from './a2a-schema.js';

/** Connect and answer timeout of each A2A request. */
const A2A_TIMEOUT_MS = 30_000;

/** The `a2a` push runtime: one agent-card cache and the feature's guarded pool, a lane per account. */
export const a2aAdapter = definePushAdapter({
  schema: A2aRuntimeSchema,
  check: ({ policy }, _workspaceUuid, runtime) =>
    checkRuntimeUrl('runtime.agent_card_url', runtime.agent_card_url, policy),
  build: ({ config, deps, lanes }) =>
    createA2aRuntime({
      outbound: { allowPrivate: config.allowPrivateUrls, lookup: deps.lookup },
      clock: deps.clock,
      timeoutMs: A2A_TIMEOUT_MS,
      lanes: lanes('a2a', A2A_TIMEOUT_MS),
    }),
});
