import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isUuid } from '../lib/ids.js';
import { type Acting, type AuthMode, actorOf, isRole, type Principal, roleAtLeast } from '../lib/principal.js';
import { errorBody } from './error-handler.js';
import { AppError, AUTH_MESSAGES, AuthError, invalid } from './errors.js';
import { forbiddenMessage, permissionOf, workspaceSourceOf } from './permissions.js';
import { hitEach, type RateLimiter, workspaceScope } from './rate-limit.js';
import { requestOriginOf } from './request-ids.js';

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
    /** Runs before the credential is read; throws to refuse (MCP's Origin check answers 403 whatever the credential). */
    beforeAuth?: (request: FastifyRequest) => void;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

type Authenticate = (headers: FastifyRequest['headers'], mode: Exclude<AuthMode, 'none'>) => Promise<Principal>;
type ResolveWorkspace = (principal: Principal, workspaceUuid: string) => Promise<Principal>;

/** The header with which a session names the workspace it acts in. */
export const WORKSPACE_HEADER = 'x-taskhook-workspace';

/** The task a `/agent/:id/task/:taskId/…` route names, in the request's workspace. */
export function taskRefOf(request: FastifyRequest) {
  const params = request.params as { id: string; taskId: string };
  return { workspaceUuid: principalOf(request).workspaceUuid, agentUuid: params.id, taskUuid: params.taskId };
}

/** Who acts, where, and from which request: what a management action writes to the audit log. */
export function actingOf(request: FastifyRequest): Acting {
  const principal = principalOf(request);
  return { workspaceUuid: principal.workspaceUuid, actor: actorOf(principal), ...requestOriginOf(request) };
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
export function registerGuard(
  app: FastifyInstance,
  deps: { authenticate: Authenticate; resolveWorkspace: ResolveWorkspace; rateLimit: RateLimiter },
) {
  app.decorateRequest('principal', null);

  // The permission table is the one place roles are decided: a route that takes a credential and
  // has no line in it is a mistake caught at start-up, not a route open to every role.
  app.addHook('onRoute', (route) => {
    const mode = route.config?.auth ?? 'none';
    if (mode === 'none') return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      if (!permissionOf(method, route.url)) throw new Error(`no permission line for ${method} ${route.url}`);
    }
  });

  /**
   * The workspace the request names (path or header), moved into; role checked. Failures are
   * returned, not thrown, so the request is counted first.
   */
  async function enterWorkspace(request: FastifyRequest, principal: Principal): Promise<Principal | AppError> {
    const url = request.routeOptions.url ?? '';
    const permission = permissionOf(request.method === 'HEAD' ? 'GET' : request.method, url);
    if (!permission) return new AppError('FORBIDDEN', 'This operation is not allowed');
    const source = workspaceSourceOf(url, permission);
    let named: string | undefined;
    if (source === 'path') {
      named = (request.params as { id?: string }).id ?? '';
      // An id that is not a UUID is malformed (400), as any path id is; a UUID of a workspace the
      // caller is not in is not found (404).
      if (!isUuid(named)) return invalid('id', 'must be a UUID', 'Invalid request: id must be a UUID');
      named = named.toLowerCase();
    } else if (source === 'header') {
      const raw = request.headers[WORKSPACE_HEADER];
      if (raw !== undefined) {
        const value = Array.isArray(raw) ? raw.join(',') : raw;
        if (!isUuid(value)) {
          return invalid(
            'X-Taskhook-Workspace',
            'must be a workspace uuid',
            'Invalid request: X-Taskhook-Workspace must be a workspace uuid',
          );
        }
        named = value.toLowerCase();
      }
    }
    try {
      return named === undefined ? principal : await deps.resolveWorkspace(principal, named);
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
  }
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
    config.beforeAuth?.(request);
    const mode = config.auth ?? 'none';
    if (mode === 'none' && config.rateLimitAfterBody) {
      uncounted.add(request);
      return;
    }
    let failure: AuthError | AppError | null = null;
    if (mode !== 'none') {
      try {
        request.principal = await deps.authenticate(request.headers, mode);
      } catch (err) {
        if (!(err instanceof AuthError)) throw err;
        failure = err;
      }
    }
    if (request.principal) {
      // A workspace the caller may not enter counts in their own (personal or key's) window.
      const entered = await enterWorkspace(request, request.principal);
      if (entered instanceof AppError) failure = entered;
      else request.principal = entered;
    }
    let scope: string | string[] | null = request.principal ? workspaceScope(request.principal.workspaceUuid) : null;
    if (!scope && !failure && config.rateLimitScope) scope = await config.rateLimitScope(request);
    const result = await count(request, reply, scope);
    if (result.exceeded) throw refuse(reply, result);
    if (failure) throw failure;
    const principal = request.principal;
    if (!principal) return;
    if (config.feature === 'agents' && !principal.agentsEnabled) {
      throw new AuthError(403, AUTH_MESSAGES.agentsDisabled);
    }
    const needed = permissionOf(request.method === 'HEAD' ? 'GET' : request.method, request.routeOptions.url ?? '');
    if (needed && isRole(needed) && !roleAtLeast(principal.role, needed)) {
      throw new AppError('FORBIDDEN', forbiddenMessage(needed));
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
