import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AcquireConnection } from '../../http/connection-limits.js';
import { errorResponses } from '../../http/error-schemas.js';
import { AppError } from '../../http/errors.js';
import { principalOf } from '../../http/guard.js';
import { A2A_METHOD_ROLES, forbiddenMessage } from '../../http/permissions.js';
import { jsonTooDeep } from '../../lib/json-depth.js';
import { roleAtLeast } from '../../lib/principal.js';
import { checkVersion, RPC_ERRORS, RpcError } from './a2a-errors.js';
import { a2aOperations, STREAMED } from './a2a-operations.js';
import type { A2aPushService } from './a2a-push-service.js';
import { a2aRestRoutes } from './a2a-rest-routes.js';
import { errorResponse, parseRequest, type RpcId, resultResponse, TOO_DEEP } from './a2a-rpc-fns.js';
import {
  A2aParams,
  AgentCardSchema,
  CARD_DESCRIPTION,
  RPC_DESCRIPTION,
  RpcResponseSchema,
} from './a2a-server-schemas.js';
import type { A2aServerService } from './a2a-server-service.js';
import type { StreamDeps } from './a2a-stream.js';

/**
 * GET /a2a/:agentId/.well-known/agent-card.json, POST /a2a/:agentId (JSON-RPC) and the HTTP+JSON
 * paths under it: two bindings over one operation layer (`a2a-operations.ts`).
 */
export function a2aServerRoutes(deps: {
  service: A2aServerService;
  push: A2aPushService;
  stream: Omit<StreamDeps, 'open' | 'service'>;
  acquire: AcquireConnection;
}) {
  const { service } = deps;
  const open = new Set<() => void>();
  // Blocking sends answer at once when the app closes, with the task as it is.
  const closing = new AbortController();
  const ops = a2aOperations({
    service,
    push: deps.push,
    stream: { ...deps.stream, service, open },
    acquire: deps.acquire,
    closing: closing.signal,
  });

  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('preClose', async () => {
      closing.abort();
      for (const end of open) end();
    });
    // Encapsulated: the endpoints read their bodies raw, so that every malformed request gets an
    // A2A error rather than the API's 400/415.
    // RFC 6750's challenge on every 401 under /a2a (A2A §3.3.2), `invalid_token` when a credential was sent.
    app.addHook('onSend', async (request, reply) => {
      if (reply.statusCode !== 401) return;
      const sent = ['authorization', 'x-api-key', 'x-service-api-key'].some((h) => request.headers[h] !== undefined);
      reply.header('www-authenticate', sent ? 'Bearer error="invalid_token"' : 'Bearer');
    });
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

    app.get(
      '/a2a/:agentId/.well-known/agent-card.json',
      {
        config: { auth: 'user', feature: 'agents' },
        schema: {
          tags: ['a2a'],
          summary: 'Agent card (A2A)',
          description: CARD_DESCRIPTION,
          params: A2aParams,
          response: {
            200: AgentCardSchema,
            304: Type.Null({ description: 'Not modified: the If-None-Match header lists the current ETag.' }),
            ...errorResponses([400, 401, 403, 404]),
          },
        },
      },
      async (request, reply) => {
        const agent = await service.agent(principalOf(request).workspaceUuid, request.params.agentId);
        const body = JSON.stringify(service.card(agent));
        // A2A §8.6.1: a strong ETag of the card's JSON, kept 5 minutes by the caller only (it took a credential).
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
        reply.header('etag', etag).header('cache-control', 'private, max-age=300');
        if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
        return reply
          .code(200)
          .header('content-type', 'application/json; charset=utf-8')
          .send(body as never);
      },
    );

    app.post(
      '/a2a/:agentId',
      {
        config: { auth: 'user', feature: 'agents' },
        schema: {
          tags: ['a2a'],
          summary: 'A2A JSON-RPC endpoint',
          description: RPC_DESCRIPTION,
          params: A2aParams,
          response: {
            200: {
              description: 'A JSON-RPC response, or an event stream for SendStreamingMessage and SubscribeToTask.',
              content: {
                'application/json': { schema: RpcResponseSchema },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            ...errorResponses([400, 401, 403, 404, 413, 429]),
          },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const workspaceUuid = principal.workspaceUuid;
        const body = typeof request.body === 'string' ? request.body : '';
        const parsed = jsonTooDeep(body)
          ? { id: null, error: TOO_DEEP }
          : parseRequest(request.headers['content-type'], body);
        // The role follows the method, and is decided before anything is looked up (an HTTP 403).
        const needed = 'error' in parsed ? undefined : A2A_METHOD_ROLES[parsed.method];
        if (needed && !roleAtLeast(principal.role, needed)) throw new AppError('FORBIDDEN', forbiddenMessage(needed));
        const agent = await service.agent(workspaceUuid, request.params.agentId);
        if ('error' in parsed) return answer(reply, errorResponse(parsed.id, parsed.error));
        const version = checkVersion(request.headers['a2a-version'], (request.query as Query)['A2A-Version']);
        if (version) return answer(reply, errorResponse(parsed.id, version));
        const frame = (response: unknown) => `data: ${JSON.stringify(resultResponse(parsed.id, response))}\n\n`;
        try {
          const { method, params } = parsed;
          const result = await ops.run({ request, reply, agent, workspaceUuid, method, params, frame });
          if (result !== STREAMED) return answer(reply, resultResponse(parsed.id, result));
        } catch (err) {
          if (err instanceof AppError) throw err;
          if (!(err instanceof RpcError)) request.log.error({ err }, 'A2A operation failed');
          const error = err instanceof RpcError ? err : new RpcError(RPC_ERRORS.internal, 'Internal error');
          return answer(reply, errorResponse(parsed.id, error));
        }
      },
    );

    a2aRestRoutes(app, { service, ops });
  };
}

type Query = Record<string, unknown>;

/** Sends a JSON-RPC response as it is (no response schema may drop its fields). */
function answer(reply: FastifyReply, body: { jsonrpc: '2.0'; id: RpcId }) {
  return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Whether an `If-None-Match` header lists `etag` (or is `*`). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim().replace(/^W\//, '');
    return t === '*' || t === etag;
  });
}
