import type { Config } from '../../config.js';
import type { FairOutbound } from '../../lib/outbound-fair.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { SpotlightService } from '../spotlight/spotlight-service.js';
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
  spotlight: Pick<SpotlightService, 'chatCompletions'>;
}

/**
 * An adapter's registration: builds its push runtime. The runtime type parameter is erased here
 * (the dispatcher hands each runtime only agents of its own `type`).
 */
export type PushAdapter = (ctx: PushContext) => PushRuntime<never>;
