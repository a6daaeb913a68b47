/**
 * A2A errors, one condition answered alike on both bindings: a JSON-RPC error object (HTTP 200)
 * or a `google.rpc.Status` body with its HTTP status (HTTP+JSON). Each A2A-specific error carries
 * an ErrorInfo with its reason, each invalid-parameter error a BadRequest naming the field.
 */

/** The JSON-RPC and A2A error codes. */
export const RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  versionNotSupported: -32009,
} as const;

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';
const DOMAIN = 'a2a-protocol.org';

/** HTTP status, `google.rpc.Code` name and ErrorInfo reason (none for plain JSON-RPC errors) of each code. */
const MAPPING: Record<number, { http: number; status: string; reason?: string }> = {
  [RPC_ERRORS.taskNotFound]: { http: 404, status: 'NOT_FOUND', reason: 'TASK_NOT_FOUND' },
  [RPC_ERRORS.taskNotCancelable]: { http: 400, status: 'FAILED_PRECONDITION', reason: 'TASK_NOT_CANCELABLE' },
  [RPC_ERRORS.pushNotSupported]: {
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
  },
  [RPC_ERRORS.unsupportedOperation]: { http: 400, status: 'FAILED_PRECONDITION', reason: 'UNSUPPORTED_OPERATION' },
  [RPC_ERRORS.contentTypeNotSupported]: {
    http: 400,
    status: 'INVALID_ARGUMENT',
    reason: 'CONTENT_TYPE_NOT_SUPPORTED',
  },
  [RPC_ERRORS.versionNotSupported]: { http: 400, status: 'FAILED_PRECONDITION', reason: 'VERSION_NOT_SUPPORTED' },
  [RPC_ERRORS.invalidParams]: { http: 400, status: 'INVALID_ARGUMENT' },
  [RPC_ERRORS.parse]: { http: 400, status: 'INVALID_ARGUMENT' },
  [RPC_ERRORS.invalidRequest]: { http: 400, status: 'INVALID_ARGUMENT' },
  [RPC_ERRORS.methodNotFound]: { http: 404, status: 'NOT_FOUND' },
  [RPC_ERRORS.internal]: { http: 500, status: 'INTERNAL' },
};

/** An A2A error. `field`: the parameter at fault (camelCase path) of an invalid-parameter error. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly opts: {
      field?: string;
      metadata?: Record<string, string>;
      http?: number;
      status?: string;
      /** The methods a path takes, for a 405's `Allow`. */
      allow?: string;
    } = {},
  ) {
    super(message);
  }

  /** The `@type` objects that tell this error apart: JSON-RPC's `data`, HTTP+JSON's `details`. */
  details(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    const reason = MAPPING[this.code]?.reason;
    if (reason) {
      out.push({
        '@type': ERROR_INFO,
        reason,
        domain: DOMAIN,
        ...(this.opts.metadata ? { metadata: this.opts.metadata } : {}),
      });
    }
    if (this.code === RPC_ERRORS.invalidParams) {
      out.push({
        '@type': BAD_REQUEST,
        fieldViolations: [{ field: this.opts.field ?? '', description: this.message }],
      });
    }
    return out;
  }

  /** The HTTP+JSON answer: its status and `{error: google.rpc.Status}` body. */
  httpAnswer(): { status: number; body: { error: Record<string, unknown> } } {
    const mapped = MAPPING[this.code] ?? { http: 500, status: 'INTERNAL' };
    const http = this.opts.http ?? mapped.http;
    const details = this.details();
    return {
      status: http,
      body: {
        error: {
          code: http,
          status: this.opts.status ?? mapped.status,
          message: this.message,
          ...(details.length > 0 ? { details } : {}),
        },
      },
    };
  }
}

export const invalidParams = (field: string, reason: string) =>
  new RpcError(RPC_ERRORS.invalidParams, `Invalid params: ${reason}`, { field });

/** HTTP+JSON only: a known path asked with another method (405, with `Allow`). */
export const methodNotAllowed = (allow: string) =>
  new RpcError(RPC_ERRORS.methodNotFound, `Method not allowed: this path takes ${allow}`, {
    http: 405,
    status: 'UNIMPLEMENTED',
    allow,
  });

/** HTTP+JSON only: a request body of a media type other than JSON (415). */
export const unsupportedMediaType = () =>
  new RpcError(RPC_ERRORS.invalidRequest, 'Content-Type must be application/a2a+json or application/json', {
    http: 415,
  });

export const PROTOCOL_VERSION = '1.0';

/**
 * A2A's version rule: a request without `A2A-Version` (header, or else the query parameter) is a
 * v0.3 request; only 1.0 (any patch level, e.g. `1.0.2`) is served. @returns the error, or null.
 */
export function checkVersion(header: string | string[] | undefined, query?: unknown): RpcError | null {
  const headerValue = Array.isArray(header) ? header[0] : header;
  const queryValue = Array.isArray(query) ? query[0] : query;
  const raw = headerValue ?? (typeof queryValue === 'string' ? queryValue : undefined);
  const value = raw?.trim() ?? '';
  if (/^1\.0(\.\d+)?$/.test(value)) return null;
  const given = value === '' ? 'none (a v0.3 request)' : `"${value.slice(0, 32)}"`;
  return new RpcError(
    RPC_ERRORS.versionNotSupported,
    `A2A protocol version ${given} is not supported: send A2A-Version: 1.0`,
    { metadata: { supportedVersions: PROTOCOL_VERSION } },
  );
}
