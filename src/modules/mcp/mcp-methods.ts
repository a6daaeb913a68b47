import type { FastifyReply } from 'fastify';
import type { Principal } from '../../lib/principal.js';
import { type McpCall, McpRpcError } from './mcp-call.js';
import type { McpService } from './mcp-service.js';
import { declaresElicitation, PROTOCOL_VERSIONS, signSession } from './mcp-session-fns.js';

export const INSTRUCTIONS =
  'Each agent of your taskhook workspace is a tool: calling it runs a task on that agent and waits for its result, ' +
  'with progress. When the agent asks a question you are asked in turn; otherwise answer with reply_to_task. ' +
  'get_task waits for a task again, cancel_task cancels one. Long tasks can run as MCP tasks.';

/** A JSON-RPC request id. */
export type RpcId = string | number | null;
/** One JSON-RPC 2.0 message: a request, a notification or a response. */
export interface Rpc {
  jsonrpc: '2.0';
  id?: RpcId;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

/** A well-formed JSON-RPC 2.0 message (a request or notification with a method, or a response). */
export function isRpc(value: unknown): value is Rpc {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const m = value as Rpc;
  if (m.jsonrpc !== '2.0') return false;
  if (m.id !== undefined && m.id !== null && typeof m.id !== 'string' && typeof m.id !== 'number') return false;
  if (m.method !== undefined) return typeof m.method === 'string';
  return m.id !== undefined && ('result' in m || 'error' in m);
}

/** Answers a JSON-RPC error with this HTTP status (refusals before a method runs). */
export function rpcError(
  reply: FastifyReply,
  status: number,
  id: RpcId,
  code: number,
  message: string,
  data?: unknown,
) {
  const error = data === undefined ? { code, message } : { code, message, data };
  return reply
    .code(status)
    .header('content-type', 'application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', id, error }));
}

/**
 * Runs one JSON-RPC request's method: initialize (which signs the session into `mcp-session-id`),
 * ping, tools/* and tasks/*. @returns the JSON-RPC result.
 * @throws McpRpcError -32601 for an unknown method, and whatever the service's methods throw.
 */
export async function runMethod(
  deps: { service: McpService; sessionKey: Buffer; version: string },
  reply: FastifyReply,
  principal: Principal,
  call: McpCall,
  rpc: Rpc & { method: string },
) {
  const { service } = deps;
  switch (rpc.method) {
    case 'initialize': {
      const params = (rpc.params ?? {}) as { protocolVersion?: unknown; capabilities?: unknown };
      const requested = String(params.protocolVersion ?? '');
      const protocolVersion = (PROTOCOL_VERSIONS as readonly string[]).includes(requested)
        ? requested
        : PROTOCOL_VERSIONS[0];
      const sessionId = signSession(deps.sessionKey, {
        userUuid: principal.userUuid,
        workspaceUuid: principal.workspaceUuid,
        protocolVersion,
        elicitation: declaresElicitation(params.capabilities),
      });
      reply.header('mcp-session-id', sessionId);
      return {
        protocolVersion,
        capabilities: {
          tools: { listChanged: false },
          tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
        },
        serverInfo: { name: 'taskhook', version: deps.version },
        instructions: INSTRUCTIONS,
      };
    }
    case 'ping':
      return {};
    case 'tools/list':
      return service.toolsList(principal, (rpc.params as { cursor?: unknown } | undefined)?.cursor);
    case 'tools/call':
      return service.toolsCall(call, rpc.params);
    case 'tasks/get':
      return service.tasksGet(principal, rpc.params);
    case 'tasks/result':
      return service.tasksResult(call, rpc.params);
    case 'tasks/cancel':
      return service.tasksCancel(principal, rpc.params);
    case 'tasks/list':
      return service.tasksList(principal, rpc.params);
    default:
      throw new McpRpcError(-32601, `Method not found: ${rpc.method.slice(0, 100)}`);
  }
}
