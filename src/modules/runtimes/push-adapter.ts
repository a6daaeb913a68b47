import type { Static, TObject } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import type { OutboundPolicy } from '../../lib/outbound.js';
import type { FairOutbound } from '../../lib/outbound-fair.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Runtime } from '../agents/runtime-schemas.js';
import type { ProvidersService } from '../providers/providers-service.js';
import type { ProxyService } from '../spotlight/proxy/proxy-service.js';
import type { PushRuntime } from './push-runtime.js';

/**
 * What the runtimes module hands every adapter to build its push runtime from, once per process:
 * the settings, the process dependencies, and the few services an adapter may call.
 */
export interface PushContext {
  config: Pick<Config, 'allowPrivateUrls' | 'publicUrl' | 'maxBodyBytes'>;
  deps: Pick<ProcessDeps, 'clock' | 'lookup'>;
  /**
   * The guarded outbound pool of one feature (`http`, `a2a`) with a lane per account in front of
   * it, made once per process; `timeoutMs` bounds each request.
   */
  lanes(feature: string, timeoutMs: number): FairOutbound;
  accounts: Pick<AccountsService, 'activeSigningSecrets'>;
  spotlight: Pick<ProxyService, 'chatCompletions'>;
}

/** Whether a workspace has a fallback route of this uuid (the model proxy's routes). */
export type RouteExists = (workspaceUuid: string, routeUuid: string) => Promise<boolean>;

/** What an adapter's check of a runtime may look at: where URLs may point, what the workspace has. */
export interface CheckContext {
  policy: OutboundPolicy;
  providers: Pick<ProvidersService, 'get'>;
  routeExists: RouteExists;
}

/**
 * A push runtime's registration: one line of `ADAPTERS` (`adapters.ts`) per agent runtime `type`.
 * The runtime type parameter is erased here (the dispatcher hands each runtime only agents of its
 * own `type`, and the agent routes let through only runtimes its schema admits).
 */
export interface PushAdapter {
  /**
   * The variant of an agent's `runtime` this adapter runs: a strict object whose `type` is a
   * literal of its own. The agent routes validate and document the field with it.
   */
  schema: TObject;
  /**
   * Checks a runtime of this type, valid by the schema, against where it points and what the
   * workspace has, when an agent is created or its runtime changed.
   * @throws AppError INVALID_REQUEST naming the field (`runtime.<field>`).
   */
  check?: (ctx: CheckContext, workspaceUuid: string, runtime: Runtime) => Promise<void>;
  /**
   * The lease a run of such an agent holds (renewed every third of it while the run goes on);
   * without it, `PUSH_LEASE_SECONDS`.
   */
  leaseSeconds?: (runtime: Runtime) => number;
  /** Builds the push runtime, once per process. */
  build: (ctx: PushContext) => PushRuntime<never>;
}

/**
 * An adapter's registration, typed by its schema: its check, lease and push runtime see the
 * runtime as the schema describes it. The type is erased here, in one place, for the list.
 */
export function definePushAdapter<S extends TObject>(adapter: {
  schema: S;
  check?: (ctx: CheckContext, workspaceUuid: string, runtime: Static<S>) => Promise<void>;
  leaseSeconds?: (runtime: Static<S>) => number;
  build: (ctx: PushContext) => PushRuntime<Static<S>>;
}): PushAdapter {
  return adapter as unknown as PushAdapter;
}
