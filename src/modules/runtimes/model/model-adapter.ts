import { AppError, invalid } from '../../../http/errors.js';
import { type CheckContext, definePushAdapter } from '../push-adapter.js';
import { createModelRuntime, modelPushRuntime } from './model-runtime.js';
import { type OpenAiRuntime, OpenAiRuntimeSchema } from './model-schema.js';

/**
 * An `openai` runtime names exactly one of a route of the workspace, or one of its provider
 * credentials with a model. Another workspace's reads as missing: 400, never a hint that it exists.
 */
async function checkModelRuntime(ctx: CheckContext, workspaceUuid: string, runtime: OpenAiRuntime): Promise<void> {
  const { route_uuid: routeUuid, provider_credential_uuid: credentialUuid, model } = runtime;
  if (routeUuid !== undefined || (credentialUuid === undefined && model === undefined)) {
    if (routeUuid === undefined || credentialUuid !== undefined || model !== undefined)
      throw invalid('runtime.route_uuid', 'give either route_uuid or provider_credential_uuid with model');
    if (!(await ctx.routeExists(workspaceUuid, routeUuid)))
      throw invalid('runtime.route_uuid', 'No route of yours has this uuid');
    return;
  }
  if (credentialUuid === undefined) throw invalid('runtime.provider_credential_uuid', 'is required with model');
  if (model === undefined) throw invalid('runtime.model', 'is required with provider_credential_uuid');
  try {
    await ctx.providers.get(workspaceUuid, credentialUuid);
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND')
      throw invalid('runtime.provider_credential_uuid', 'No provider credential of yours has this uuid');
    throw err;
  }
}

/** The `openai` push runtime: each run is one chat completion through the model proxy's path. */
export const modelAdapter = definePushAdapter({
  schema: OpenAiRuntimeSchema,
  check: checkModelRuntime,
  build: (ctx) => modelPushRuntime(createModelRuntime({ spotlight: ctx.spotlight, now: () => ctx.deps.clock.now() })),
});
