/** The closed list of error codes of the API, with their statuses in docs/api.md §2.3. */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'NOT_FOUND',
  'TASK_NOT_CANCELLABLE',
  'TASK_NOT_ACCEPTING_MESSAGES',
  'TASK_NOT_RUNNING',
  'AGENT_UNAVAILABLE',
  'TRIGGER_DISABLED',
  'RATE_LIMITED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'IDEMPOTENCY_KEY_REUSED',
  'CONFLICT',
  'CREDENTIAL_IN_USE',
  'ROUTE_IN_USE',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
  'LIMIT_EXCEEDED',
  'OAUTH_STATE_INVALID',
  'OAUTH_PROVIDER_UNAVAILABLE',
  'FORBIDDEN',
  'PERSONAL_WORKSPACE',
  'LAST_OWNER',
  'INVITATION_INVALID',
  'INVITATION_EMAIL_MISMATCH',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The HTTP status of each code; exhaustive, so a new code cannot be forgotten. */
export function statusFor(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_REQUEST':
    case 'TASK_NOT_CANCELLABLE':
    case 'TASK_NOT_ACCEPTING_MESSAGES':
    case 'TASK_NOT_RUNNING':
    case 'OAUTH_STATE_INVALID':
    case 'INVITATION_INVALID':
      return 400;
    // A size or count limit is a 400; a limit on open streams or waits answers 429 (set per error).
    case 'LIMIT_EXCEEDED':
      return 400;
    case 'TRIGGER_DISABLED':
    case 'FORBIDDEN':
    case 'INVITATION_EMAIL_MISMATCH':
      return 403;
    case 'NOT_FOUND':
      return 404;
    case 'CONFLICT':
    case 'CREDENTIAL_IN_USE':
    case 'ROUTE_IN_USE':
    case 'PERSONAL_WORKSPACE':
    case 'LAST_OWNER':
      return 409;
    case 'PAYLOAD_TOO_LARGE':
      return 413;
    case 'UNSUPPORTED_MEDIA_TYPE':
      return 415;
    case 'IDEMPOTENCY_KEY_REUSED':
      return 422;
    case 'RATE_LIMITED':
      return 429;
    case 'INTERNAL_ERROR':
      return 500;
    case 'OAUTH_PROVIDER_UNAVAILABLE':
      return 502;
    case 'AGENT_UNAVAILABLE':
    case 'SERVICE_UNAVAILABLE':
      return 503;
  }
}

export interface ErrorDetails {
  field: string;
  reason: string;
}

/** An error the API reports in the documented envelope shape. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    status?: number,
  ) {
    super(message);
    this.status = status ?? statusFor(code);
  }
}

/**
 * A 429 `RATE_LIMITED` of a rule of its own (not the request rate limit): its `Retry-After` is
 * `retryAfterSeconds`, and the `X-RateLimit-*` headers keep describing the request window.
 */
export class RetryLaterError extends AppError {
  constructor(
    message: string,
    details: ErrorDetails,
    readonly retryAfterSeconds: number,
  ) {
    super('RATE_LIMITED', message, details);
  }
}

/**
 * An authentication or account-gate failure: 401, or a 403 about the account or the credential
 * kind, always answered with the flat `{"error": message}` shape (docs/api.md §2.2).
 *
 * It carries no stack trace: it is an answer, never logged, and capturing the (async) stack of
 * every refused request was the dearest part of a 401.
 */
export class AuthError extends Error {
  readonly status: 401 | 403;
  constructor(status: 401 | 403, message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = status;
  }
}

export const AUTH_MESSAGES = {
  missing: 'Authorization header is required',
  invalid: 'Invalid or expired token',
  sessionRequired: 'This endpoint requires a user session',
  unverified: 'Please verify your e-mail address: check your inbox for the verification e-mail',
  agentsDisabled: 'The AI agents feature is not enabled for this account',
  badLogin: 'Invalid email or password',
} as const;

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);
export const invalid = (field: string, reason: string, message?: string) =>
  new AppError('INVALID_REQUEST', message ?? `Invalid ${field}: ${reason}`, { field, reason });
