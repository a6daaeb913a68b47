import type { Principal } from '../../lib/principal.js';
import type { McpChannel } from './mcp-wait.js';

/** A JSON-RPC error answered inside a 200 (or with `status` when the transport says so). */
export class McpRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const invalidParams = (message: string) => new McpRpcError(-32602, message);

/** What a 2026-07-28 request declared in its `_meta` envelope. */
export interface ModernRequest {
  /** `io.modelcontextprotocol/clientCapabilities`. */
  capabilities: Record<string, unknown>;
}

/** What one request knows of its caller. */
export interface McpCall {
  principal: Principal;
  /** When the request arrived (epoch ms): the start of its `tools/call` span. */
  receivedAtMs: number;
  /** The JSON-RPC id, as a string. */
  requestId: string;
  /** The `MCP-Protocol-Version` header, when it came. */
  protocolVersion?: string | undefined;
  /** The HTTP `traceparent` header (`params._meta.traceparent` wins when valid). */
  traceparent?: string | undefined;
  /** The client declared elicitation (its 2025 session says so); never true for a modern request. */
  elicitation: boolean;
  /** Set for a 2026-07-28 request: what its envelope declared. */
  modern?: ModernRequest | undefined;
  /** Opens the SSE stream of this POST (once) for a waiting answer. */
  stream: () => McpChannel;
}

export interface CallParams {
  name: string;
  arguments?: unknown;
  task?: unknown;
  requestState?: unknown;
  inputResponses?: unknown;
  _meta?: { progressToken?: string | number; [key: string]: unknown };
}

export function callParams(raw: unknown): CallParams {
  if (!raw || typeof raw !== 'object') throw invalidParams('params must be an object');
  const params = raw as CallParams;
  if (typeof params.name !== 'string') throw invalidParams('params.name must be a string');
  return params;
}

/** The offset an opaque cursor of this server names (`<prefix><n>`). @throws -32602 for a foreign one. */
export function cursorOffset(cursor: unknown, prefix: string): number {
  if (cursor === undefined) return 0;
  const match = typeof cursor === 'string' ? new RegExp(`^${prefix}(\\d{1,9})$`).exec(cursor) : null;
  if (!match) throw invalidParams('Invalid cursor');
  return Number(match[1]);
}
