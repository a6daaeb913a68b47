import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConnectionLimits } from '../../../http/connection-limits.js';
import { handleError } from '../../../http/error-handler.js';
import { AppError, AuthError } from '../../../http/errors.js';
import { principalOf } from '../../../http/guard.js';
import { openAiError, ProxyError } from './proxy-fns.js';
import {
  ChatCompletionBody,
  ChatCompletionReply,
  ModelListReply,
  OpenAiErrorSchema,
  ResponsesBody,
  ResponsesReply,
} from './proxy-schemas.js';
import type { ChatAnswer, ChatRequest, ProxyService } from './proxy-service.js';
import type { ProxyAnswer } from './proxy-upstream.js';

const tags = ['model proxy'];
const config = { auth: 'user' as const };
const openAiErrors = Object.fromEntries(
  [400, 403, 404, 413, 415, 429, 500, 502, 504].map((s) => [s, OpenAiErrorSchema]),
);
const LIMITS_NOTE =
  ' A platform key whose models allowlist matches no pattern to the model identifier (<credential name>/<model>, or route:<name>) is refused with 403 model_not_allowed (type permission_error), after the credential or route is resolved and before X-Taskhook-Task-Id is checked. Requests- and tokens-per-minute limits of the key and of the attributed agent (see /spotlight/rate_limits) are checked next: over a limit is 429 rate_limit_exceeded (type requests or tokens) with Retry-After and X-Taskhook-Rate-Limit-Scope; an admitted call in a limited scope carries x-ratelimit-limit|remaining|reset-requests|tokens. Neither refusal is recorded.';
/** Seconds a caller at the in-flight cap is asked to wait: calls usually end within seconds. */
const IN_FLIGHT_RETRY_AFTER_S = 1;

const header = (request: FastifyRequest, name: string) => {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Authentication and the rate limit keep their own shapes; everything else speaks OpenAI's. */
function openAiErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AuthError || (err instanceof AppError && err.code === 'RATE_LIMITED')) {
    return handleError(err, request, reply);
  }
  if (err instanceof ProxyError) return sendJson(reply.headers(err.headers), err.status, JSON.stringify(err.body));
  if (err instanceof AppError && err.code === 'LIMIT_EXCEEDED') {
    reply.header('retry-after', String(IN_FLIGHT_RETRY_AFTER_S));
    const body = openAiError(err.message, 'invalid_request_error', 'LIMIT_EXCEEDED');
    return sendJson(reply, err.status, JSON.stringify(body));
  }
  // The workspace refusals of the guard, in OpenAI's shape with their own codes.
  const workspaceCode =
    err instanceof AppError
      ? err.code === 'FORBIDDEN'
        ? 'forbidden'
        : err.code === 'NOT_FOUND'
          ? 'workspace_not_found'
          : err.details?.field === 'X-Taskhook-Workspace'
            ? 'invalid_request'
            : null
      : null;
  if (err instanceof AppError && workspaceCode) {
    const body = openAiError(err.message, 'invalid_request_error', workspaceCode, err.details?.field ?? null);
    return sendJson(reply, err.status, JSON.stringify(body));
  }
  // Refused by the app's own body parser (e.g. JSON nested too deep): the same refusal, in OpenAI's shape.
  if (err instanceof AppError && err.status < 500) {
    const body = openAiError(err.message, 'invalid_request_error', null, err.details?.field ?? null);
    return sendJson(reply, err.status, JSON.stringify(body));
  }
  const status =
    err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
      ? 413
      : err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? 415
        : err.statusCode;
  if (status && status >= 400 && status < 500) {
    const message =
      status === 413
        ? 'Request body is too large'
        : status === 415
          ? 'Send the request as application/json'
          : err.message;
    return sendJson(reply, status, JSON.stringify(openAiError(message, 'invalid_request_error', null)));
  }
  // The caller hung up while the answer was being relayed: nothing to answer, nothing wrong here.
  if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || request.raw.destroyed || reply.raw.destroyed) {
    request.log.debug({ err }, 'the caller closed the connection before the answer was complete');
    return reply;
  }
  request.log.error({ err }, 'unhandled proxy error');
  return sendJson(reply, 500, JSON.stringify(openAiError('Internal server error', 'server_error' as never, null)));
}

function sendJson(reply: FastifyReply, status: number, body: string) {
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(body);
}

function send(reply: FastifyReply, answer: ProxyAnswer) {
  reply.code(answer.status).headers(answer.headers);
  return reply.send(answer.body);
}

/**
 * An AbortSignal that fires when the caller's connection closes before the answer is complete.
 * (The response's 'close' comes after the end of a complete answer too; the request's 'close'
 * only says its body was read.)
 */
function callerGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * Takes one of the caller's in-flight slots until the answer has ended (a stream included) or the
 * caller has gone.
 * @throws AppError 429 LIMIT_EXCEEDED when the caller already holds them all.
 */
function holdSlot(slots: Pick<ConnectionLimits, 'acquire'>, request: FastifyRequest, reply: FastifyReply) {
  const release = slots.acquire(principalOf(request).workspaceUuid, 'proxy');
  reply.raw.once('close', release);
}

/** One model call: the caller's request as plain data to the service, its answer relayed. */
async function modelCall(
  kind: (req: ChatRequest) => Promise<ChatAnswer>,
  request: FastifyRequest,
  reply: FastifyReply,
  slots: Pick<ConnectionLimits, 'acquire'>,
) {
  holdSlot(slots, request, reply);
  const principal = principalOf(request);
  const answer = await kind({
    workspaceUuid: principal.workspaceUuid,
    platformKeyUuid: principal.via === 'platform_key' ? principal.credentialUuid : null,
    allowedModels: principal.via === 'platform_key' ? principal.keyModels : null,
    body: request.body,
    credential: header(request, 'x-taskhook-credential'),
    taskId: header(request, 'x-taskhook-task-id'),
    cache: request.headers['x-taskhook-cache'],
    traceparent: header(request, 'traceparent'),
    signal: callerGone(reply),
  });
  if (answer.callId) reply.header('x-taskhook-call-id', answer.callId);
  return send(reply, answer);
}

/**
 * The OpenAI-compatible proxy under /spotlight/v1 (a JWT or a platform key). `slots` bounds the
 * calls one user has in flight on this instance, so one account cannot hold every upstream
 * connection.
 */
export function proxyRoutes(
  service: ProxyService,
  opts: { maxBodyBytes: number; slots: Pick<ConnectionLimits, 'acquire'> },
) {
  return async function routes(app: FastifyInstance) {
    app.setNotFoundHandler((request, reply) =>
      sendJson(
        reply,
        404,
        JSON.stringify(
          openAiError(`Unknown path ${request.url.split('?')[0]}`, 'invalid_request_error', 'unknown_url'),
        ),
      ),
    );

    const callOptions = {
      config,
      bodyLimit: opts.maxBodyBytes,
      errorHandler: openAiErrorHandler,
      // The service checks the body itself: errors here are OpenAI's, and unknown fields pass through.
      attachValidation: true,
    };

    app.post(
      '/chat/completions',
      {
        ...callOptions,
        schema: {
          tags,
          summary: 'Chat completion through a provider credential',
          description:
            'OpenAI-compatible: point an OpenAI client at {base_url}/spotlight/v1 with a platform key. The credential is chosen by X-Taskhook-Credential, or by the model prefix `<credential name>/`; `route:<name>` calls a fallback route (see /spotlight/routes), trying its targets in order on its retry_on failures (404 route_not_found when no route has that name). X-Taskhook-Task-Id attributes the call to one of your tasks. The upstream answer (status, body, Content-Type, Retry-After) is relayed; streams event by event. Every call that selected a credential is recorded, and its answer carries X-Taskhook-Call-Id. A reached budget (see /spotlight/budgets) answers 429 with code budget_exceeded, type insufficient_quota, the X-Taskhook-Budget-Scope/-Limit-Usd/-Spent-Usd headers, Retry-After (until the window ends; not for a task) and X-Should-Retry: false. While any budget applies to the call (a limit on the workspace, the platform key, or the agent or task it is attributed to), a model without a price (of any target of a route) is refused before anything goes upstream: 400 code model_not_priced, param model, recorded with attempts []. X-Taskhook-Cache: max-age=<1-86400> (or the cache_ttl_seconds of a route) answers an identical earlier request from the memory of this instance (X-Taskhook-Cache: hit, Age) without going upstream, and otherwise marks the answer X-Taskhook-Cache: miss; no-store turns the cache of a route off; any other value is 400 invalid_cache_header.' +
            LIMITS_NOTE,
          body: ChatCompletionBody,
          response: { 200: ChatCompletionReply, ...openAiErrors },
        },
      },
      (request, reply) => modelCall((req) => service.chatCompletions(req), request, reply, opts.slots),
    );

    app.post(
      '/responses',
      {
        ...callOptions,
        schema: {
          tags,
          summary: 'OpenAI Responses API call through a provider credential',
          description:
            'OpenAI-compatible Responses API (client.responses.create with baseURL {base_url}/spotlight/v1 and a platform key): credential selection, routes of provider openai, attribution, budgets, records (api "responses") and the cache as for chat completions. The body is passed upstream to {base_url}/responses with only model changed; input must be a string or an array; background: true is 400 unsupported_parameter. Streams (stream: true) are relayed event by event with their event: lines; usage comes from the terminal event (response.completed, response.incomplete, response.failed). A stream that breaks ends with event: error (code upstream_timeout or upstream_error). A call with previous_response_id or conversation is not cached (X-Taskhook-Cache: bypass). Other paths under /responses are 404.' +
            LIMITS_NOTE,
          body: ResponsesBody,
          response: { 200: ResponsesReply, ...openAiErrors },
        },
      },
      (request, reply) => modelCall(service.responses, request, reply, opts.slots),
    );

    app.get(
      '/models',
      {
        config,
        errorHandler: openAiErrorHandler,
        schema: {
          tags,
          summary: 'Models of your provider credentials',
          description:
            "With X-Taskhook-Credential: that upstream's list as it is. Without: every credential's models with ids `<credential name>/<id>`, leaving out credentials whose upstream fails, then each route as `route:<name>` (owned_by taskhook). A platform key with a models allowlist sees only the entries it may call.",
          response: { 200: ModelListReply, ...openAiErrors },
        },
      },
      async (request, reply) => {
        holdSlot(opts.slots, request, reply);
        const principal = principalOf(request);
        const allowed = principal.via === 'platform_key' ? (principal.keyModels ?? null) : null;
        return send(
          reply,
          await service.models(
            principal.workspaceUuid,
            header(request, 'x-taskhook-credential'),
            callerGone(reply),
            allowed,
          ),
        );
      },
    );
  };
}
