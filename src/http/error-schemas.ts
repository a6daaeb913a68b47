import { type TSchema, Type } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorCode } from './errors.js';

/** The envelope of every error other than authentication failures (docs/api.md §2.2). */
export const ErrorEnvelopeSchema = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      // An enum, not a union of literals: the response serializer writes an enum as a plain
      // string, while a union makes it run (and, on a route's first error, compile) a schema
      // validator to pick the branch, which stalled the event loop at the start of a login flood.
      code: Type.Unsafe<ErrorCode>({
        type: 'string',
        enum: [...ERROR_CODES],
        description: 'Machine-readable error code.',
      }),
      message: Type.String({ description: 'Human-readable explanation.' }),
      details: Type.Optional(
        Type.Object({
          field: Type.String({ description: 'The offending field, as a dotted path.' }),
          reason: Type.String({ description: 'What is wrong with it.' }),
        }),
      ),
    }),
    meta: Type.Object({
      request_id: Type.String({ description: 'Same as the X-Request-Id response header.' }),
      timestamp: Type.String({ format: 'date-time' }),
    }),
  },
  { $id: 'ErrorEnvelope', title: 'ErrorEnvelope' },
);

/** Authentication failures (401 and the account 403s) use this flat shape (docs/api.md §2.2). */
export const FlatErrorSchema = Type.Object({ error: Type.String() }, { $id: 'FlatError', title: 'FlatError' });

const envelopeRef = Type.Ref('ErrorEnvelope');
const flatRef = Type.Ref('FlatError');

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, a field of the wrong type, an unknown field, or a rule of the operation (INVALID_REQUEST and the operation-specific codes).',
  401: 'Missing or invalid credential (flat body).',
  403: 'Unverified e-mail, agents feature disabled, or a platform key on a user-session endpoint (flat body); FORBIDDEN when the role in the workspace is too low, INVITATION_EMAIL_MISMATCH for an invitation to another address (envelope).',
  404: 'Not found, or not yours (NOT_FOUND).',
  409: 'Conflict (CONFLICT; CREDENTIAL_IN_USE for a provider credential an agent or a route uses; ROUTE_IN_USE for a model-proxy route an agent uses; PERSONAL_WORKSPACE, LAST_OWNER for workspace members).',
  413: 'Request body larger than TASKHOOK_MAX_BODY_BYTES (PAYLOAD_TOO_LARGE).',
  415: 'Unsupported content type (UNSUPPORTED_MEDIA_TYPE).',
  422: 'Idempotency key reused with a different request (IDEMPOTENCY_KEY_REUSED).',
  429: 'Rate limit exceeded (RATE_LIMITED; see Retry-After), or too many open event streams or waiting claims (LIMIT_EXCEEDED).',
  500: 'Unexpected server error (INTERNAL_ERROR); the request id identifies it in the logs.',
  502: 'An identity provider failed or did not answer (OAUTH_PROVIDER_UNAVAILABLE).',
  503: 'Service or agent unavailable (SERVICE_UNAVAILABLE with Retry-After, AGENT_UNAVAILABLE).',
};

export type ErrorStatus = keyof typeof DESCRIPTIONS;

/** Response schemas for the given error statuses, with their documented shapes. */
export function errorResponses(statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of statuses) {
    const description = DESCRIPTIONS[status] ?? 'Error';
    if (status === 401) out[status] = Type.Unsafe({ ...flatRef, description });
    else if (status === 403) out[status] = Type.Unsafe({ anyOf: [flatRef, envelopeRef], description });
    else out[status] = Type.Unsafe({ ...envelopeRef, description });
  }
  return out;
}

/** Errors any route can answer: bad input, rate limit, server trouble. */
export const COMMON_ERRORS = [400, 413, 415, 429, 500, 503];
/** Errors of routes that need a credential. */
export const AUTHED_ERRORS = [...COMMON_ERRORS, 401, 403];
