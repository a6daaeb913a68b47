import { AppError, invalid } from '../../http/errors.js';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../lib/outbound.js';
import type { RuntimeCheck } from '../agents/agents-service.js';
import { normaliseBaseUrl } from '../providers/providers-fns.js';
import type { ProvidersService } from '../providers/providers-service.js';

/** Whether a workspace has a fallback route of this uuid (the model proxy's routes). */
export type RouteExists = (workspaceUuid: string, routeUuid: string) => Promise<boolean>;

/**
 * Checks a URL the service will call as a provider's `base_url` is checked: its form, then
 * whether its host is public (unless private addresses are allowed).
 * @throws AppError INVALID_REQUEST naming `field`.
 */
async function checkRuntimeUrl(field: string, raw: string, policy: OutboundPolicy): Promise<void> {
  const form = normaliseBaseUrl(raw);
  if (!form.ok) throw invalid(field, form.reason);
  try {
    await checkOutboundUrl(form.url, policy);
  } catch (err) {
    if (err instanceof OutboundUrlError) throw invalid(field, err.message);
    throw err;
  }
}

/**
 * The check of a runtime against what its owner has and where it points: an `openai` runtime
 * must name one of the owner's provider credentials (another user's reads as missing: 400, never
 * a hint that it exists); `http` and `a2a` URLs must be well-formed and public.
 */
export function createRuntimeCheck(
  providers: Pick<ProvidersService, 'get'>,
  policy: OutboundPolicy,
  routeExists: RouteExists,
): RuntimeCheck {
  return async (workspaceUuid, runtime) => {
    if (runtime.type === 'http') return checkRuntimeUrl('runtime.url', runtime.url, policy);
    if (runtime.type === 'a2a') return checkRuntimeUrl('runtime.agent_card_url', runtime.agent_card_url, policy);
    if (runtime.type !== 'openai') return;
    // Exactly one of route_uuid or the pair provider_credential_uuid + model.
    const { route_uuid: routeUuid, provider_credential_uuid: credentialUuid, model } = runtime;
    if (routeUuid !== undefined || (credentialUuid === undefined && model === undefined)) {
      if (routeUuid === undefined || credentialUuid !== undefined || model !== undefined)
        throw invalid('runtime.route_uuid', 'give either route_uuid or provider_credential_uuid with model');
      if (!(await routeExists(workspaceUuid, routeUuid)))
        throw invalid('runtime.route_uuid', 'No route of yours has this uuid');
      return;
    }
    if (credentialUuid === undefined) throw invalid('runtime.provider_credential_uuid', 'is required with model');
    if (model === undefined) throw invalid('runtime.model', 'is required with provider_credential_uuid');
    try {
      await providers.get(workspaceUuid, credentialUuid);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND')
        throw invalid('runtime.provider_credential_uuid', 'No provider credential of yours has this uuid');
      throw err;
    }
  };
}
