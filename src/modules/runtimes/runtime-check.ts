import { AppError, invalid } from '../../http/errors.js';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../lib/outbound.js';
import type { RuntimeCheck } from '../agents/agents-service.js';
import { normaliseBaseUrl } from '../providers/providers-fns.js';
import type { ProvidersService } from '../providers/providers-service.js';

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
export function createRuntimeCheck(providers: Pick<ProvidersService, 'get'>, policy: OutboundPolicy): RuntimeCheck {
  return async (workspaceUuid, runtime) => {
    if (runtime.type === 'http') return checkRuntimeUrl('runtime.url', runtime.url, policy);
    if (runtime.type === 'a2a') return checkRuntimeUrl('runtime.agent_card_url', runtime.agent_card_url, policy);
    if (runtime.type !== 'openai') return;
    try {
      await providers.get(workspaceUuid, runtime.provider_credential_uuid);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND')
        throw invalid('runtime.provider_credential_uuid', 'No provider credential of yours has this uuid');
      throw err;
    }
  };
}
