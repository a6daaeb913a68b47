import { invalid } from '../../http/errors.js';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../lib/outbound.js';
import { normaliseBaseUrl } from '../providers/providers-fns.js';

/**
 * Checks a URL a push runtime will call as a provider's `base_url` is checked: its form, then
 * whether its host is public (unless private addresses are allowed).
 * @throws AppError INVALID_REQUEST naming `field`.
 */
export async function checkRuntimeUrl(field: string, raw: string, policy: OutboundPolicy): Promise<void> {
  const form = normaliseBaseUrl(raw);
  if (!form.ok) throw invalid(field, form.reason);
  try {
    await checkOutboundUrl(form.url, policy);
  } catch (err) {
    if (err instanceof OutboundUrlError) throw invalid(field, err.message);
    throw err;
  }
}
