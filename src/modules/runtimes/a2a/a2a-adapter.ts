import type { PushAdapter } from '../push-adapter.js';
import type { PushRuntime } from '../push-runtime.js';
import { createA2aRuntime } from './a2a-runtime.js';

/** The `a2a` push runtime: one guarded connection pool and one agent-card cache per process. */
export const a2aAdapter: PushAdapter = ({ config, deps }) =>
  createA2aRuntime({
    outbound: { allowPrivate: config.allowPrivateUrls, lookup: deps.lookup },
    clock: deps.clock,
  }) as PushRuntime<never>;
