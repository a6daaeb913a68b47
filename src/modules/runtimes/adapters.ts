import type { RuntimeCheck } from '../agents/agents-service.js';
import { RuntimeHeadersSchema, type RuntimeSchemas, runtimeSchemas } from '../agents/runtime-schemas.js';
import { a2aAdapter } from './a2a/a2a-adapter.js';
import { httpAdapter } from './http/http-adapter.js';
import { modelAdapter } from './model/model-adapter.js';
import type { CheckContext, PushAdapter } from './push-adapter.js';

/**
 * The registered push runtimes. A new runtime is a folder `runtimes/<name>/` (its schema, its
 * check, its push runtime, and `<name>-adapter.ts` joining them) and one line here: the agent
 * routes, the runtime check and the dispatcher all read this list.
 */
const ADAPTERS: readonly PushAdapter[] = [modelAdapter, httpAdapter, a2aAdapter];

/** An adapter's runtime `type`: the literal of its schema's `type` field. */
export function typeOfAdapter(adapter: PushAdapter): string {
  const literal: unknown = adapter.schema.properties.type?.const;
  if (typeof literal !== 'string') throw new Error("a push adapter's schema needs a string literal `type`");
  return literal;
}

/**
 * The push runtimes by agent runtime `type`, after checking the list: each type once, none of them
 * the built-in `worker`, and a `headers` field (which the agents room seals at rest and masks in
 * answers) only in the one shape that sealing knows.
 * @throws Error naming the registration that breaks a rule, when the module loads.
 */
export function adaptersByType(adapters: readonly PushAdapter[]): Readonly<Record<string, PushAdapter>> {
  const byType: Record<string, PushAdapter> = {};
  for (const adapter of adapters) {
    const type = typeOfAdapter(adapter);
    if (type === 'worker') throw new Error('a push adapter cannot take the built-in type "worker"');
    if (byType[type]) throw new Error(`two push adapters register the type "${type}"`);
    const headers = adapter.schema.properties.headers;
    if (headers && JSON.stringify(headers) !== JSON.stringify(RuntimeHeadersSchema))
      throw new Error(`the push adapter "${type}" has a headers field that is not RuntimeHeadersSchema`);
    byType[type] = adapter;
  }
  return byType;
}

/** The registered push runtimes by agent runtime `type`. */
export const ADAPTERS_BY_TYPE = adaptersByType(ADAPTERS);

/** The agent's `runtime` field as the routes validate and document it: the worker's and each adapter's. */
export function registeredRuntimeSchemas(): RuntimeSchemas {
  return runtimeSchemas(ADAPTERS.map((adapter) => adapter.schema));
}

/** The check of a runtime when an agent is created or its runtime changed: its adapter's, if any. */
export function createRuntimeCheck(ctx: CheckContext): RuntimeCheck {
  return async (workspaceUuid, runtime) => {
    await ADAPTERS_BY_TYPE[runtime.type]?.check?.(ctx, workspaceUuid, runtime);
  };
}
