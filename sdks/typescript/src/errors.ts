/** Where an error answer came from, as each error class keeps it. */
export interface ErrorFields {
  status?: number | undefined;
  code?: string | undefined;
  message: string;
  details?: unknown;
  requestId?: string | undefined;
  body?: unknown;
}

/** An error answer of the taskhook API (or, for the subclass TaskhookConnectionError, no answer). */
export class TaskhookError extends Error {
  /** The HTTP status; undefined when no answer came. */
  readonly status: number | undefined;
  /** The structured error's code (e.g. TASK_NOT_CANCELLABLE); undefined for flat errors. */
  readonly code: string | undefined;
  readonly details: unknown;
  /** The answer's X-Request-Id (else meta.request_id). */
  readonly requestId: string | undefined;
  /** The parsed JSON body, else its text. */
  readonly body: unknown;

  constructor(fields: ErrorFields) {
    super(fields.message);
    this.name = new.target.name;
    this.status = fields.status;
    this.code = fields.code;
    this.details = fields.details;
    this.requestId = fields.requestId;
    this.body = fields.body;
  }
}

/** 400. */
export class BadRequestError extends TaskhookError {}
/** 401. */
export class AuthenticationError extends TaskhookError {}
/** 403. */
export class PermissionDeniedError extends TaskhookError {}
/** 404. */
export class NotFoundError extends TaskhookError {}
/** 409. */
export class ConflictError extends TaskhookError {}
/** 429; `retryAfter` is the Retry-After seconds when the answer had them. */
export class RateLimitError extends TaskhookError {
  readonly retryAfter: number | undefined;
  constructor(fields: ErrorFields & { retryAfter?: number | undefined }) {
    super(fields);
    this.retryAfter = fields.retryAfter;
  }
}
/** 500 and above. */
export class ServerError extends TaskhookError {}
/** No answer: refused, reset, timed out, unknown host. */
export class TaskhookConnectionError extends TaskhookError {}

const BY_STATUS: Record<number, typeof TaskhookError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
};

/** Reads a Retry-After header as seconds (undefined when absent or not a number). */
export function retryAfterOf(value: string | string[] | null | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text === null || text.trim() === '') return undefined;
  const seconds = Number(text);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/**
 * The error of an answer: the envelope `{error: {code, message, details}}`, a flat `{error: "…"}`,
 * or a body that is not JSON (a proxy's HTML page).
 */
export function errorOf(
  status: number,
  body: unknown,
  headers: { requestId?: string | undefined; retryAfter?: string | string[] | null | undefined } = {},
): TaskhookError {
  const envelope = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : undefined;
  const err = envelope?.error;
  const structured = typeof err === 'object' && err !== null ? (err as Record<string, unknown>) : undefined;
  const code = typeof structured?.code === 'string' ? structured.code : undefined;
  const message =
    typeof err === 'string'
      ? err
      : typeof structured?.message === 'string'
        ? structured.message
        : `The server answered HTTP ${status}`;
  const meta = envelope?.meta as { request_id?: unknown } | undefined;
  const requestId = headers.requestId ?? (typeof meta?.request_id === 'string' ? meta.request_id : undefined);
  const fields: ErrorFields = { status, code, message, details: structured?.details, requestId, body };
  if (status === 429) return new RateLimitError({ ...fields, retryAfter: retryAfterOf(headers.retryAfter) });
  if (status >= 500) return new ServerError(fields);
  const Class = BY_STATUS[status] ?? TaskhookError;
  return new Class(fields);
}
