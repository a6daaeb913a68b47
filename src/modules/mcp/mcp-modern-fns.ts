import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import type { Role } from '../../lib/principal.js';
import type { ModernRequest } from './mcp-call.js';

/** The stateless revision: every request carries its own `_meta` envelope. */
export const MODERN_VERSION = '2026-07-28';
/** Every revision `/mcp` serves, newest first (`server/discover`, the -32022 error's `supported`). */
export const SUPPORTED_VERSIONS = [MODERN_VERSION, '2025-11-25', '2025-06-18'] as const;

/** The methods a 2026-07-28 request may name, with the least role each needs (tools/call: per tool). */
export const MODERN_METHODS: Readonly<Record<string, Role>> = {
  'server/discover': 'viewer',
  'tools/list': 'viewer',
  'tools/call': 'viewer',
  'tasks/get': 'viewer',
  'tasks/update': 'member',
  'tasks/cancel': 'member',
  'subscriptions/listen': 'viewer',
};

/** The body field the `Mcp-Name` routing header mirrors, per method. */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** A refusal before a modern method runs: the HTTP status and the JSON-RPC error. */
export interface ModernRefusal {
  status: number;
  code: number;
  message: string;
  data?: unknown;
}

type Headers = Record<string, string | string[] | undefined>;

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const header = (headers: Headers, name: string) => {
  const value = headers[name];
  return value === undefined ? undefined : Array.isArray(value) ? value.join(', ') : value.trim();
};
const metaOf = (params: unknown) => (isObject(params) && isObject(params._meta) ? params._meta : undefined);

/** The -32022 error: the revisions served and the one asked for. */
export function unsupportedVersion(requested: unknown): ModernRefusal {
  return {
    status: 400,
    code: -32022,
    message: 'Unsupported protocol version',
    data: { supported: [...SUPPORTED_VERSIONS], requested },
  };
}

/**
 * Whether a POSTed request or notification speaks 2026-07-28: its `params._meta` holds the
 * protocol-version key, or the `MCP-Protocol-Version` header names that revision.
 */
export function isModern(message: { method?: string; params?: unknown }, headers: Headers): boolean {
  if (message.method === undefined) return false;
  const meta = metaOf(message.params);
  return (
    (meta !== undefined && PROTOCOL_VERSION_META_KEY in meta) ||
    header(headers, 'mcp-protocol-version') === MODERN_VERSION
  );
}

/** `=?base64?<b64>?=` decoded (UTF-8); a plain value as it is; undefined when malformed. */
export function decodeHeaderValue(value: string): string | undefined {
  const sentinel = /^=\?base64\?(.*)\?=$/.exec(value);
  if (!sentinel) return value;
  const b64 = sentinel[1] as string;
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(b64)) return undefined;
  const decoded = Buffer.from(b64, 'base64');
  const text = decoded.toString('utf8');
  return Buffer.from(text, 'utf8').equals(decoded) ? text : undefined;
}

/**
 * A modern request's checks, in order: the envelope's version (-32602, -32022), the envelope's
 * other keys (-32602), the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers (-32020),
 * the method (404 -32601). @returns the refusal, or the envelope when the request may run.
 */
export function checkModern(
  rpc: { method: string; params?: unknown },
  headers: Headers,
): ModernRefusal | ModernRequest {
  const meta = metaOf(rpc.params) ?? {};
  const version = meta[PROTOCOL_VERSION_META_KEY];
  const malformed = (message: string): ModernRefusal => ({ status: 400, code: -32602, message });
  if (version !== undefined && typeof version !== 'string')
    return malformed(`Invalid params: _meta.${PROTOCOL_VERSION_META_KEY} must be a string`);
  if (typeof version === 'string' && version !== MODERN_VERSION) return unsupportedVersion(version);
  if (version === undefined) return malformed(`Invalid params: _meta.${PROTOCOL_VERSION_META_KEY} is required`);
  const capabilities = meta[CLIENT_CAPABILITIES_META_KEY];
  if (!isObject(capabilities))
    return malformed(`Invalid params: _meta.${CLIENT_CAPABILITIES_META_KEY} must be an object`);
  const info = meta[CLIENT_INFO_META_KEY];
  if (info !== undefined && !(isObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    return malformed(`Invalid params: _meta.${CLIENT_INFO_META_KEY} must have a string name and version`);
  }
  const mismatch = (message: string): ModernRefusal => ({
    status: 400,
    code: -32020,
    message: `Header mismatch: ${message}`,
  });
  if (header(headers, 'mcp-protocol-version') !== version)
    return mismatch('MCP-Protocol-Version must equal the _meta protocol version');
  if (header(headers, 'mcp-method') !== rpc.method) return mismatch('Mcp-Method must equal the method');
  const field = Object.hasOwn(NAME_SOURCE, rpc.method) ? NAME_SOURCE[rpc.method] : undefined;
  if (field !== undefined) {
    const raw = header(headers, 'mcp-name');
    const named = raw === undefined ? undefined : decodeHeaderValue(raw);
    const body = isObject(rpc.params) ? rpc.params[field] : undefined;
    if (named === undefined || typeof body !== 'string' || named !== body)
      return mismatch(`Mcp-Name must equal params.${field}`);
  }
  if (!Object.hasOwn(MODERN_METHODS, rpc.method)) {
    return { status: 404, code: -32601, message: `Method not found: ${rpc.method.slice(0, 100)}` };
  }
  return { capabilities };
}

/** A modern result: `resultType` (complete unless the result says) and the server's identity in `_meta`. */
export function modernResult(result: Record<string, unknown>, version: string) {
  const meta = isObject(result._meta) ? result._meta : {};
  return {
    resultType: 'complete',
    ...result,
    _meta: { ...meta, [SERVER_INFO_META_KEY]: { name: 'taskhook', version } },
  };
}

/** The tasks extension declared in a modern envelope's capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export function modernTasks(request: ModernRequest): boolean {
  const extensions = request.capabilities.extensions;
  return isObject(extensions) && isObject(extensions[TASKS_EXTENSION]);
}
