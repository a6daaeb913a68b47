import { forbiddenMessage } from '../../http/permissions.js';
import { roleAtLeast } from '../../lib/principal.js';
import { type McpCall, McpRpcError } from './mcp-call.js';
import { INSTRUCTIONS } from './mcp-methods.js';
import { MODERN_METHODS, modernResult, SUPPORTED_VERSIONS, TASKS_EXTENSION } from './mcp-modern-fns.js';
import type { McpService } from './mcp-service.js';

/** How long a client may keep `server/discover` (public: the same for everyone) and a tools page (private). */
const DISCOVER_TTL_MS = 3_600_000;
const TOOLS_TTL_MS = 60_000;

/**
 * Runs one 2026-07-28 request that passed `checkModern`: the method's role, then the method.
 * @returns the result with `resultType` and the server's identity in `_meta`, or null when the
 * stream was closed before it had one.
 * @throws McpRpcError for JSON-RPC errors answered inside a 200.
 */
export async function runModernMethod(
  deps: { service: McpService; version: string },
  call: McpCall,
  rpc: { method: string; params?: unknown },
) {
  const needed = MODERN_METHODS[rpc.method] ?? 'owner';
  if (!roleAtLeast(call.principal.role, needed)) {
    throw new McpRpcError(-32600, `FORBIDDEN: ${forbiddenMessage(needed)}`);
  }
  const result = await run(deps, call, rpc);
  return result === null ? null : modernResult(result as Record<string, unknown>, deps.version);
}

async function run(deps: { service: McpService }, call: McpCall, rpc: { method: string; params?: unknown }) {
  const { service } = deps;
  switch (rpc.method) {
    case 'server/discover':
      return {
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: { tools: { listChanged: true }, extensions: { [TASKS_EXTENSION]: {} } },
        instructions: INSTRUCTIONS,
        ttlMs: DISCOVER_TTL_MS,
        cacheScope: 'public',
      };
    case 'tools/list': {
      const page = await service.toolsList(call.principal, (rpc.params as { cursor?: unknown } | undefined)?.cursor);
      // Tasks are server-directed under 2026-07-28: no tool says whether it takes them.
      const tools = page.tools.map((tool) => {
        const { execution: _execution, ...rest } = tool as typeof tool & { execution?: unknown };
        return rest;
      });
      return { ...page, tools, ttlMs: TOOLS_TTL_MS, cacheScope: 'private' };
    }
    case 'tools/call': {
      // The 2025 task augmentation means nothing here: served as if absent.
      const { task: _task, ...params } = (rpc.params ?? {}) as { task?: unknown };
      return service.toolsCall(call, params);
    }
    case 'tasks/get':
      return service.modernTasks.get(call, rpc.params);
    case 'tasks/update':
      return service.modernTasks.update(call, rpc.params);
    case 'tasks/cancel':
      return service.modernTasks.cancel(call, rpc.params);
    default:
      throw new McpRpcError(-32601, `Method not found: ${rpc.method.slice(0, 100)}`);
  }
}
