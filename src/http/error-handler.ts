import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DbUnavailableError, translateDbError, UnstorableTextError } from '../db/errors.js';
import { SealedSecretError } from '../lib/crypto.js';
import { HashingBusyError } from '../lib/passwords.js';
import { AppError, AuthError, type ErrorCode, type ErrorDetails, RetryLaterError, statusFor } from './errors.js';

interface AjvIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** The documented envelope for an error code. */
export function errorBody(request: FastifyRequest, code: ErrorCode, message: string, details?: ErrorDetails) {
  return {
    success: false as const,
    error: details ? { code, message, details } : { code, message },
    meta: { request_id: request.id, timestamp: new Date().toISOString() },
  };
}

/** Turns the first schema-validation issue into `{field, reason}` naming a dotted path. */
export function detailsFromValidation(issues: AjvIssue[], context: string | undefined): ErrorDetails {
  const issue = issues[0];
  const base = issue?.instancePath.split('/').filter(Boolean).join('.') ?? '';
  const join = (name: unknown) => (base ? `${base}.${String(name)}` : String(name));
  if (!issue) return { field: context ?? 'body', reason: 'is invalid' };
  switch (issue.keyword) {
    case 'required':
      return { field: join(issue.params.missingProperty), reason: 'is required' };
    case 'additionalProperties':
      return { field: join(issue.params.additionalProperty), reason: 'is not an allowed field' };
    default:
      return { field: base || context || 'body', reason: issue.message ?? 'is invalid' };
  }
}

const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'Request body is too large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type: send application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['INVALID_REQUEST', 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['INVALID_REQUEST', 'Request body is empty'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['INVALID_REQUEST', 'Request body is not valid JSON'],
};

/** The one error handler: every failure leaves in a documented shape, never with internals. */
export function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AuthError) {
    return reply.code(err.status).send({ error: err.message });
  }
  if (err instanceof AppError) {
    const retryable = err.code === 'RATE_LIMITED' || err.code === 'SERVICE_UNAVAILABLE';
    if (err instanceof RetryLaterError) reply.header('retry-after', err.retryAfterSeconds);
    else if (retryable && !reply.hasHeader('retry-after')) reply.header('retry-after', 1);
    return reply.code(err.status).send(errorBody(request, err.code, err.message, err.details));
  }
  if (err.validation) {
    const details = detailsFromValidation(err.validation as AjvIssue[], err.validationContext);
    const where = err.validationContext === 'body' ? '' : ` (${err.validationContext})`;
    return reply
      .code(400)
      .send(
        errorBody(request, 'INVALID_REQUEST', `Invalid request${where}: ${details.field} ${details.reason}`, details),
      );
  }
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (mapped) {
    return reply.code(statusFor(mapped[0])).send(errorBody(request, mapped[0], mapped[1]));
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return reply.code(400).send(errorBody(request, 'INVALID_REQUEST', 'Request body is not valid JSON'));
  }
  const translated = translateDbError(err);
  if (translated instanceof UnstorableTextError) {
    const reason = 'contains text that cannot be stored (a NUL character, U+0000)';
    return reply.code(400).send(errorBody(request, 'INVALID_REQUEST', `Invalid request: ${reason}`));
  }
  if (translated instanceof DbUnavailableError) {
    request.log.error({ err }, 'database unavailable');
    return reply
      .code(503)
      .send(errorBody(request, 'SERVICE_UNAVAILABLE', 'The database is unavailable; try again shortly'));
  }
  if (err instanceof HashingBusyError) {
    if (!reply.hasHeader('retry-after')) reply.header('retry-after', 1);
    return reply.code(503).send(errorBody(request, 'SERVICE_UNAVAILABLE', err.message));
  }
  if (err instanceof SealedSecretError) {
    // The operator's fault, not the caller's: the log names the variable to fix.
    request.log.error({ err }, err.message);
    return reply
      .code(503)
      .send(errorBody(request, 'SERVICE_UNAVAILABLE', 'A stored secret cannot be opened with the configured keys'));
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    request.log.info({ err }, 'client error');
    const code: ErrorCode = err.statusCode === 404 ? 'NOT_FOUND' : 'INVALID_REQUEST';
    return reply.code(err.statusCode === 404 ? 404 : 400).send(errorBody(request, code, err.message));
  }
  request.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody(request, 'INTERNAL_ERROR', 'Internal server error'));
}
