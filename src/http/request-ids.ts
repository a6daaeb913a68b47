import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { RequestOrigin } from '../lib/principal.js';

/** An X-Request-Id the service accepts from a client (and echoes); any other is replaced. */
export const CLIENT_REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's X-Request-Id when it is acceptable, else null. */
export function acceptedClientRequestId(header: string | string[] | undefined): string | null {
  return typeof header === 'string' && CLIENT_REQUEST_ID_RE.test(header) ? header : null;
}

/**
 * The id a request is known by in the response and the log (`request.id`): the client's accepted
 * X-Request-Id, else a UUID the server makes.
 */
export function genRequestId(headers: Record<string, string | string[] | undefined>): string {
  return acceptedClientRequestId(headers['x-request-id']) ?? randomUUID();
}

/** Server ids of requests whose `request.id` is the client's; made when first asked for. */
const serverIds = new WeakMap<FastifyRequest, string>();

/**
 * The server's own id for a request: a UUID it made, never a value the client chose. It is
 * `request.id` when the client sent no acceptable X-Request-Id; otherwise one made for the request
 * the first time it is asked for (every audit entry of the request carries the same one).
 */
export function serverRequestId(request: FastifyRequest): string {
  if (acceptedClientRequestId(request.headers['x-request-id']) === null) return request.id;
  let id = serverIds.get(request);
  if (id === undefined) {
    id = randomUUID();
    serverIds.set(request, id);
  }
  return id;
}

/** What the audit log records of the request an action came from. */
export function requestOriginOf(request: FastifyRequest): RequestOrigin {
  return {
    ip: request.ip,
    requestId: serverRequestId(request),
    clientRequestId: acceptedClientRequestId(request.headers['x-request-id']),
  };
}
