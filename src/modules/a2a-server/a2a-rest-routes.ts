import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses } from '../../http/error-schemas.js';
import { AppError } from '../../http/errors.js';
import { principalOf } from '../../http/guard.js';
import { A2A_METHOD_ROLES, forbiddenMessage } from '../../http/permissions.js';
import { jsonTooDeep } from '../../lib/json-depth.js';
import { roleAtLeast } from '../../lib/principal.js';
import { checkVersion, RPC_ERRORS, RpcError } from './a2a-errors.js';
import { type A2aOperations, STREAMED } from './a2a-operations.js';
import { answerType, restCall, restMethodOf } from './a2a-rest-fns.js';
import { REST_DESCRIPTION, restErrorResponses } from './a2a-server-schemas.js';
import type { A2aServerService } from './a2a-server-service.js';

/** Success statuses other than 200. */
const STATUS_OF: Record<string, number> = {
  CreateTaskPushNotificationConfig: 201,
  DeleteTaskPushNotificationConfig: 204,
};

const Open = (title: string) => Type.Object({}, { additionalProperties: true, title });
const Params = (extra: Record<string, TSchema> = {}) =>
  Type.Object({ agentId: Type.String({ format: 'uuid' }), ...extra });
const TaskId = Type.String({ description: 'A task id; `{id}:cancel` and `{id}:subscribe` add a verb after it.' });

/** The documented paths (Fastify's `::` is a literal colon), each with the operation it serves. */
const PATHS: Array<{ method: 'GET' | 'POST' | 'DELETE'; url: string; summary: string }> = [
  { method: 'POST', url: '/message::send', summary: 'SendMessage (A2A HTTP+JSON)' },
  { method: 'POST', url: '/message::stream', summary: 'SendStreamingMessage (A2A HTTP+JSON)' },
  { method: 'GET', url: '/tasks', summary: 'ListTasks (A2A HTTP+JSON)' },
  { method: 'GET', url: '/tasks/:taskId', summary: 'GetTask, or SubscribeToTask for {id}:subscribe (A2A HTTP+JSON)' },
  {
    method: 'POST',
    url: '/tasks/:taskId',
    summary: 'CancelTask ({id}:cancel) or SubscribeToTask ({id}:subscribe) (A2A HTTP+JSON)',
  },
  {
    method: 'POST',
    url: '/tasks/:taskId/pushNotificationConfigs',
    summary: 'CreateTaskPushNotificationConfig (A2A HTTP+JSON)',
  },
  {
    method: 'GET',
    url: '/tasks/:taskId/pushNotificationConfigs',
    summary: 'ListTaskPushNotificationConfigs (A2A HTTP+JSON)',
  },
  {
    method: 'GET',
    url: '/tasks/:taskId/pushNotificationConfigs/:configId',
    summary: 'GetTaskPushNotificationConfig (A2A HTTP+JSON)',
  },
  {
    method: 'DELETE',
    url: '/tasks/:taskId/pushNotificationConfigs/:configId',
    summary: 'DeleteTaskPushNotificationConfig (A2A HTTP+JSON)',
  },
  { method: 'GET', url: '/extendedAgentCard', summary: 'GetExtendedAgentCard (A2A HTTP+JSON; always refused)' },
];

/** Every other path and method under an interface URL, answered 404 or 405 by `restCall`. */
export const REST_FALLBACK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The HTTP+JSON binding of A2A under `/a2a/:agentId`: each path is turned into its operation and
 * ProtoJSON parameters (`a2a-rest-fns.ts`) and run by the same operation layer as JSON-RPC.
 * Registered inside the A2A plugin, whose bodies are read raw.
 */
export function a2aRestRoutes(app: FastifyInstance, deps: { service: A2aServerService; ops: A2aOperations }) {
  for (const path of PATHS) {
    const params: Record<string, TSchema> = {};
    if (path.url.includes(':taskId')) params.taskId = TaskId;
    if (path.url.includes(':configId')) params.configId = Type.String();
    app.route({
      method: path.method,
      url: `/a2a/:agentId${path.url}`,
      config: { auth: 'user', feature: 'agents' },
      schema: {
        tags: ['a2a'],
        summary: path.summary,
        description: REST_DESCRIPTION,
        params: Params(params),
        response: {
          200: {
            description: 'The operation result as ProtoJSON, or an event stream for message:stream and :subscribe.',
            content: {
              'application/a2a+json': { schema: Open('A2A result (ProtoJSON)') },
              'text/event-stream': { schema: { type: 'string' } },
            },
          },
          ...restErrorResponses(),
          ...errorResponses([401, 403, 413, 429]),
        },
      },
      handler: (request, reply) => handle(request, reply),
    });
  }
  app.route({
    method: [...REST_FALLBACK_METHODS],
    url: '/a2a/:agentId/*',
    config: { auth: 'user', feature: 'agents' },
    schema: { hide: true },
    handler: (request, reply) => handle(request, reply),
  });

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    const principal = principalOf(request);
    const workspaceUuid = principal.workspaceUuid;
    const agentId = (request.params as { agentId: string }).agentId;
    const rest = restPath(request.url, agentId);
    // The role follows the operation the method and path name, decided before any lookup.
    const needed = A2A_METHOD_ROLES[restMethodOf(request.method, rest) ?? ''];
    if (needed && !roleAtLeast(principal.role, needed)) throw new AppError('FORBIDDEN', forbiddenMessage(needed));
    const agent = await deps.service.agent(workspaceUuid, agentId);
    const type = answerType(request.headers.accept);
    try {
      const query = request.query as Record<string, unknown>;
      const body = request.method === 'POST' && typeof request.body === 'string' ? request.body : '';
      const known = restCall(request.method, rest, query, request.headers['content-type'], '');
      const version = checkVersion(request.headers['a2a-version'], query['A2A-Version']);
      if (version) throw version;
      if (jsonTooDeep(body)) throw new RpcError(RPC_ERRORS.invalidRequest, 'The body nests too deeply');
      const { method, params } =
        body === '' ? known : restCall(request.method, rest, query, request.headers['content-type'], body);
      const frame = (response: unknown) => `data: ${JSON.stringify(response)}\n\n`;
      const result = await deps.ops.run({ request, reply, agent, workspaceUuid, method, params, frame });
      if (result === STREAMED) return;
      const status = STATUS_OF[method] ?? 200;
      if (status === 204) return reply.code(204).send();
      return reply.code(status).header('content-type', type).send(JSON.stringify(result));
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (!(err instanceof RpcError)) request.log.error({ err }, 'A2A operation failed');
      const error = err instanceof RpcError ? err : new RpcError(RPC_ERRORS.internal, 'Internal error');
      const { status, body } = error.httpAnswer();
      if (error.opts.allow) reply.header('allow', error.opts.allow);
      return reply.code(status).header('content-type', type).send(JSON.stringify(body));
    }
  }
}

/** The path after the interface URL `/a2a/<agentId>/`, undecoded, without the query. */
function restPath(url: string, agentId: string): string {
  const path = url.split('?')[0] ?? '';
  const prefix = `/a2a/${agentId}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : path.replace(/^\/a2a\/[^/]*\//, '');
}
