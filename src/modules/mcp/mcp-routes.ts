import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AcquireConnection } from '../../http/connection-limits.js';
import { errorResponses } from '../../http/error-schemas.js';
import { AuthError } from '../../http/errors.js';
import { principalOf } from '../../http/guard.js';
import { startEventStream } from '../../http/stream-watch.js';
import { jsonTooDeep } from '../../lib/json-depth.js';
import type { Notifier } from '../../lib/notifier.js';
import type { CredentialCheck, Principal } from '../../lib/principal.js';
import type { Clock, Timers } from '../../lib/time.js';
import { type McpCall, McpRpcError, type ModernRequest } from './mcp-call.js';
import { listen } from './mcp-listen.js';
import { isRpc, type Rpc, type RpcId, rpcError, runMethod } from './mcp-methods.js';
import { runModernMethod } from './mcp-modern.js';
import { checkModern, isModern, SUPPORTED_VERSIONS, unsupportedVersion } from './mcp-modern-fns.js';
import type { McpService } from './mcp-service.js';
import { cancelKeyOf, isRpcId, type McpSession, verifySession } from './mcp-session-fns.js';
import type { McpChannel } from './mcp-wait.js';

declare module '../../lib/notifier.js' {
  interface NotifierChannels {
    /** An MCP client cancelled a request that waits on a task; id: its session, caller and request id. */
    'mcp-cancel': true;
  }
}

/** POST /mcp (Streamable HTTP, stateless sessions); GET and DELETE answer 405. */
export function mcpRoutes(deps: {
  service: McpService;
  sessionKey: Buffer;
  version: string;
  allowedOrigins: string[];
  credentials: CredentialCheck;
  timers: Timers;
  clock: Clock;
  notifier: Pick<Notifier, 'publish' | 'subscribe'>;
  acquire: AcquireConnection;
  /** Where the protected resource metadata is (RFC 9728), while the MCP authorization server is on. */
  resourceMetadata: string | null;
}) {
  const open = new Set<() => void>();
  const anyOrigin = deps.allowedOrigins.includes('*');

  /** DNS-rebinding protection: runs before the credential (the guard calls it first). */
  function checkOrigin(request: FastifyRequest) {
    const origin = request.headers.origin;
    if (origin === undefined || anyOrigin) return;
    let serialized: string | null = null;
    try {
      const url = new URL(String(origin));
      serialized = url.origin === 'null' ? null : url.origin;
    } catch {}
    if (serialized === null || !deps.allowedOrigins.includes(serialized))
      throw new AuthError(403, 'Origin not allowed');
  }

  return async function routes(app: FastifyInstance) {
    app.addHook('preClose', async () => {
      for (const end of open) end();
    });
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    // Both 401s say how to authenticate (RFC 6750) and, with OAuth on, where to (RFC 9728 §5.1).
    app.addHook('onSend', async (_request, reply, payload) => {
      if (reply.statusCode === 401 && !reply.hasHeader('www-authenticate')) {
        const invalid = typeof payload === 'string' && payload.includes('Invalid or expired');
        reply.header('www-authenticate', bearerChallenge(deps.resourceMetadata, invalid));
      }
      return payload;
    });

    const config = { auth: 'mcp' as const, feature: 'agents' as const, beforeAuth: checkOrigin };
    const refuse405 = async (_request: FastifyRequest, reply: FastifyReply) =>
      rpcError(reply.header('allow', 'POST'), 405, null, -32000, 'Method not allowed: use POST');
    for (const method of ['GET', 'DELETE'] as const) {
      app.route({
        method,
        url: '/mcp',
        config,
        schema: { hide: true },
        handler: refuse405,
      });
    }

    app.post(
      '/mcp',
      {
        config,
        schema: {
          tags: ['mcp'],
          summary: 'MCP endpoint (Streamable HTTP)',
          description:
            'The Model Context Protocol server: one JSON-RPC message per POST, in revision 2026-07-28 (server/discover, tools/list, tools/call, tasks/get, tasks/update, tasks/cancel; per-request _meta envelope and routing headers) or 2025-11-25 / 2025-06-18 (initialize, ping, tools/*, tasks/*). Answers JSON, or an event stream for answers that wait. See docs/mcp.md.',
          response: {
            200: {
              description: 'A JSON-RPC response, or an event stream ending with one.',
              content: {
                'application/json': { schema: { type: 'object' } },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            202: { description: 'Notifications or responses accepted.', type: 'null' },
            ...errorResponses([400, 401, 403, 404, 413, 429]),
          },
        },
      },
      async (request, reply) => {
        const accept = String(request.headers.accept ?? '');
        if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
          return rpcError(reply, 406, null, -32000, 'Not Acceptable: accept application/json and text/event-stream');
        }
        if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
          return rpcError(reply, 415, null, -32000, 'Unsupported Media Type: send application/json');
        }
        const body = typeof request.body === 'string' ? request.body : '';
        let message: unknown;
        try {
          if (jsonTooDeep(body)) throw new Error('too deep');
          message = JSON.parse(body);
        } catch {
          return rpcError(reply, 400, null, -32700, 'Parse error');
        }
        if (!isRpc(message)) return rpcError(reply, 400, null, -32600, 'Invalid Request: one JSON-RPC 2.0 message');
        const version = request.headers['mcp-protocol-version'];
        if (version !== undefined && !(SUPPORTED_VERSIONS as readonly string[]).includes(String(version).trim())) {
          const refusal = unsupportedVersion(String(version));
          return rpcError(reply, 400, null, refusal.code, refusal.message, refusal.data);
        }
        const principal = principalOf(request);
        if (isModern(message, request.headers)) {
          // 2026-07-28: each request stands alone (no session); notifications mean nothing over HTTP.
          if (message.id === undefined) return reply.code(202).send();
          const rpc = message as Rpc & { method: string; id: RpcId };
          const checked = checkModern(rpc, request.headers);
          if ('status' in checked) {
            return rpcError(reply, checked.status, rpc.id, checked.code, checked.message, checked.data);
          }
          if (rpc.method === 'subscriptions/listen') return listen({ ...deps, open }, request, reply, principal, rpc);
          return dispatch(request, reply, principal, null, rpc, checked);
        }
        const session = sessionOf(request, principal);
        if (session === 'foreign') return rpcError(reply, 404, null, -32001, 'Session not found: initialize again');
        if (message.method === undefined) {
          if (message.id !== undefined && ('result' in message || 'error' in message)) {
            await deps.service.answer(principal, message);
          }
          return reply.code(202).send();
        }
        if (message.id === undefined) {
          const cancelled = (message.params as { requestId?: unknown } | undefined)?.requestId;
          if (message.method === 'notifications/cancelled' && isRpcId(cancelled)) {
            // Whichever instance holds the wait stops it (PostgreSQL carries the hint to the others).
            deps.notifier.publish('mcp-cancel', cancelKeyOf(request.headers['mcp-session-id'], principal, cancelled));
          }
          return reply.code(202).send();
        }
        return dispatch(request, reply, principal, session, message as Rpc & { method: string; id: RpcId });
      },
    );
  };

  function sessionOf(request: FastifyRequest, principal: Principal): McpSession | null | 'foreign' {
    const raw = request.headers['mcp-session-id'];
    if (raw === undefined) return null;
    const session = verifySession(deps.sessionKey, String(raw));
    if (!session || session.userUuid !== principal.userUuid || session.workspaceUuid !== principal.workspaceUuid) {
      return 'foreign';
    }
    return session;
  }

  async function dispatch(
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    session: McpSession | null,
    rpc: Rpc & { method: string; id: RpcId },
    modern?: ModernRequest,
  ) {
    // The span of a tools/call starts when the request arrived, not when its body was parsed.
    const receivedAtMs = deps.clock.now() - reply.elapsedTime;
    let channel: (McpChannel & { end(): void }) | null = null;
    let release: (() => void) | null = null;
    let cancelled = false;
    const version = request.headers['mcp-protocol-version'];
    const traceparent = request.headers.traceparent;
    const call: McpCall = {
      principal,
      receivedAtMs,
      requestId: String(rpc.id),
      protocolVersion: version === undefined ? undefined : String(version),
      traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      elicitation: session?.elicitation ?? false,
      modern,
      stream: () => {
        if (channel) return channel;
        const aborted = new AbortController();
        const stream = startEventStream(reply, {
          credentials: deps.credentials,
          timers: deps.timers,
          request,
          principal,
          open,
          onEnd: () => aborted.abort(),
        });
        channel = {
          signal: aborted.signal,
          send: (m) => {
            if (!stream.closed) stream.raw.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
          },
          end: stream.end,
        };
        if (cancelled) stream.end();
        return channel;
      },
    };
    const waits = modern
      ? rpc.method === 'tools/call'
      : rpc.method === 'tasks/result' ||
        (rpc.method === 'tools/call' && (rpc.params as { task?: unknown } | undefined)?.task === undefined);
    // notifications/cancelled for this request: the wait stops, the stream ends without a result
    // (MCP: no response to a cancelled request); the task itself is not cancelled. Under 2026-07-28
    // closing the stream is the only cancellation.
    const stopListening =
      waits && !modern
        ? deps.notifier.subscribe(
            'mcp-cancel',
            cancelKeyOf(request.headers['mcp-session-id'], principal, rpc.id),
            () => {
              cancelled = true;
              (channel as (McpChannel & { end(): void }) | null)?.end();
            },
          )
        : null;
    try {
      // A waiting request holds one of the workspace's waits, from before anything is done.
      if (waits) release = deps.acquire(principal.workspaceUuid, 'wait');
      const result = modern
        ? await runModernMethod(deps, call, rpc)
        : await runMethod(deps, reply, principal, call, rpc);
      const response = { jsonrpc: '2.0', id: rpc.id, result };
      const opened = channel as (McpChannel & { end(): void }) | null;
      if (opened) {
        if (result !== null && !opened.signal.aborted) opened.send(response);
        opened.end();
        return reply;
      }
      return reply.code(200).header('content-type', 'application/json').send(JSON.stringify(response));
    } catch (err) {
      const opened = channel as (McpChannel & { end(): void }) | null;
      const failure = err instanceof McpRpcError ? err : null;
      if (!failure && !opened) throw err;
      if (!failure) request.log.error({ err }, 'MCP request failed');
      const error = failure
        ? {
            code: failure.code,
            message: failure.message,
            ...(failure.data === undefined ? {} : { data: failure.data }),
          }
        : { code: -32603, message: 'Internal error' };
      const response = { jsonrpc: '2.0', id: rpc.id, error };
      if (opened) {
        opened.send(response);
        opened.end();
        return reply;
      }
      return reply.code(200).header('content-type', 'application/json').send(JSON.stringify(response));
    } finally {
      stopListening?.();
      release?.();
    }
  }
}

/** The `WWW-Authenticate` of a 401 on /mcp: a refused credential is `invalid_token`. */
function bearerChallenge(resourceMetadata: string | null, invalid: boolean): string {
  const params = invalid ? ['error="invalid_token"'] : [];
  if (resourceMetadata) {
    if (invalid) params.push('error_description="Invalid or expired token"');
    params.push(`resource_metadata="${resourceMetadata}"`, 'scope="mcp"');
  }
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}
