import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthMode, Principal } from '../lib/principal.js';
import { errorBody } from './error-handler.js';
import { AppError, AUTH_MESSAGES, AuthError } from './errors.js';
import { hitEach, type RateLimiter, userScope } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which credential the route takes; default 'none'. */
    auth?: AuthMode;
    /** Routes of the agents feature answer 403 to accounts that do not have it. */
    feature?: 'agents';
    /**
     * Rate-limit scope for unauthenticated routes; several count the request in each (a trigger's
     * delivery: the trigger and its owner); null falls back to the client address.
     */
    rateLimitScope?: (request: FastifyRequest) => Promise<string | string[] | null>;
    /**
     * Count the request once its body is read (a preHandler), because `rateLimitScope` needs the
     * body (a trigger's signature is over it). A request refused before that (413, a body that
     * does not parse, a timeout) counts against the client address when it is answered.
     */
    rateLimitAfterBody?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

type Authenticate = (headers: FastifyRequest['headers'], mode: Exclude<AuthMode, 'none'>) => Promise<Principal>;

/** The task a `/agent/:id/task/:taskId/…` route names, for the requesting user. */
export function taskRefOf(request: FastifyRequest) {
  const params = request.params as { id: string; taskId: string };
  return { userUuid: principalOf(request).userUuid, agentUuid: params.id, taskUuid: params.taskId };
}

/** The authenticated principal of a route that requires one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AuthError(401, AUTH_MESSAGES.missing);
  return request.principal;
}

/**
 * One onRequest hook for every route, 404s included: the X-Request-Id header, authentication, then count the request
 * against its scope (the user, the route's own scope, or the client address), set the
 * X-RateLimit-* headers, and only then report a rate-limit or authentication failure.
 */
export function registerGuard(app: FastifyInstance, deps: { authenticate: Authenticate; rateLimit: RateLimiter }) {
  app.decorateRequest('principal', null);
  /** Requests whose count waits for their body (`rateLimitAfterBody`) and has not happened yet. */
  const uncounted = new WeakSet<FastifyRequest>();

  /** Counts the request against each scope (the client address when null), sets the headers, reports a 429. */
  async function count(request: FastifyRequest, reply: FastifyReply, scope: string | string[] | null) {
    const result = Array.isArray(scope)
      ? await hitEach(deps.rateLimit, scope)
      : await deps.rateLimit(scope ?? `ip:${request.ip}`);
    reply.headers({
      'x-ratelimit-limit': result.limit,
      'x-ratelimit-remaining': result.remaining,
      'x-ratelimit-reset': result.reset,
    });
    return result;
  }

  function refuse(reply: FastifyReply, result: Awaited<ReturnType<RateLimiter>>) {
    reply.header('retry-after', result.retryAfter);
    return new AppError('RATE_LIMITED', `Rate limit of ${result.limit} requests per minute exceeded`);
  }

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    const config = request.routeOptions.config;
    const mode = config.auth ?? 'none';
    if (mode === 'none' && config.rateLimitAfterBody) {
      uncounted.add(request);
      return;
    }
    let failure: AuthError | null = null;
    if (mode !== 'none') {
      try {
        request.principal = await deps.authenticate(request.headers, mode);
      } catch (err) {
        if (!(err instanceof AuthError)) throw err;
        failure = err;
      }
    }
    let scope: string | string[] | null = request.principal ? userScope(request.principal.userUuid) : null;
    if (!scope && !failure && config.rateLimitScope) scope = await config.rateLimitScope(request);
    const result = await count(request, reply, scope);
    if (result.exceeded) throw refuse(reply, result);
    if (failure) throw failure;
    if (config.feature === 'agents' && request.principal && !request.principal.agentsEnabled) {
      throw new AuthError(403, AUTH_MESSAGES.agentsDisabled);
    }
  });

  async function countAfterBody(request: FastifyRequest, reply: FastifyReply) {
    if (!uncounted.has(request)) return;
    uncounted.delete(request);
    const scope = (await request.routeOptions.config.rateLimitScope?.(request)) ?? null;
    const result = await count(request, reply, scope);
    if (result.exceeded) throw refuse(reply, result);
  }

  // Refused before its body was read: it still counts, against the client address.
  async function countRefusedBeforeBody(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    if (!uncounted.has(request)) return payload;
    uncounted.delete(request);
    await count(request, reply, null);
    return payload;
  }

  // Only routes that count after their body need these two hooks: as route-level hooks, every
  // other request skips them. Ahead of the route's own hooks, as app-wide hooks would run.
  app.addHook('onRoute', (route) => {
    if (!route.config?.rateLimitAfterBody) return;
    route.preHandler = [countAfterBody, ...hookList(route.preHandler)];
    route.onSend = [countRefusedBeforeBody, ...hookList(route.onSend)];
  });
}

function hookList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}

/**
 * Fastify's own refusals before a route is found (a URL that does not decode, a path parameter
 * over the router's limit): 400 INVALID_REQUEST in the documented envelope, counted against the
 * client address, with the X-Request-Id and X-RateLimit-* headers every response carries.
 */
export function answerFrameworkError(rateLimit: RateLimiter) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);
    const answer = async () => {
      const result = await rateLimit(`ip:${request.ip}`);
      reply.headers({
        'x-ratelimit-limit': result.limit,
        'x-ratelimit-remaining': result.remaining,
        'x-ratelimit-reset': result.reset,
      });
      if (result.exceeded) {
        reply.header('retry-after', result.retryAfter);
        reply
          .code(429)
          .send(errorBody(request, 'RATE_LIMITED', `Rate limit of ${result.limit} requests per minute exceeded`));
        return;
      }
      const reason = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'the URL does not decode';
      reply
        .code(400)
        .send(errorBody(request, 'INVALID_REQUEST', `Invalid request: ${reason}`, { field: 'path', reason }));
    };
    answer().catch((failure: unknown) => {
      request.log.error({ err: failure }, 'refusing a malformed request failed');
      if (!reply.sent)
        reply.code(400).send(errorBody(request, 'INVALID_REQUEST', 'Invalid request: the URL does not decode'));
    });
  };
}
