import type { PushAdapter } from '../push-adapter.js';
import type { PushRuntime } from '../push-runtime.js';
import { createModelRuntime, modelPushRuntime } from './model-runtime.js';

/** The `openai` push runtime: each run is one chat completion through the model proxy's path. */
export const modelAdapter: PushAdapter = (ctx) =>
  modelPushRuntime(
    createModelRuntime({ spotlight: ctx.spotlight, now: () => ctx.deps.clock.now() }),
  ) as PushRuntime<never>;
