import { AppError, invalid } from '../../http/errors.js';
import type { RuntimeCheck } from '../agents/agents-service.js';
import type { ProvidersService } from '../providers/providers-service.js';

/**
 * The check of a runtime against what its owner has: an `openai` runtime must name one of the
 * owner's provider credentials. Another user's credential reads as missing (400, never a hint
 * that it exists).
 */
export function createRuntimeCheck(providers: Pick<ProvidersService, 'get'>): RuntimeCheck {
  return async (userUuid, runtime) => {
    if (runtime.type !== 'openai') return;
    try {
      await providers.get(userUuid, runtime.provider_credential_uuid);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND')
        throw invalid('runtime.provider_credential_uuid', 'No provider credential of yours has this uuid');
      throw err;
    }
  };
}
