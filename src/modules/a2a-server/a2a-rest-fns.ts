import { invalidParams, methodNotAllowed, RPC_ERRORS, RpcError, unsupportedMediaType } from './a2a-errors.js';

/**
 * The HTTP+JSON binding's paths, relative to the interface URL `/a2a/<agent uuid>`: which
 * operation (by its JSON-RPC method name) a method and path name, and its parameters as the same
 * ProtoJSON object a JSON-RPC request carries.
 */
export interface RestCall {
  method: string;
  params: Record<string, unknown>;
}

type Query = Record<string, unknown>;

/** The operations of one path, by HTTP method. */
type PathOps = Record<string, (query: Query, body: () => Record<string, unknown>) => RestCall>;

const op = (method: string, params: Record<string, unknown>): RestCall => ({ method, params });

/** The path's operations, or null when the path names none. `rest` is the path after the interface URL. */
function pathOps(rest: string): PathOps | null {
  const segments = rest.split('/').map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  const [first, id, third, configId, ...more] = segments;
  if (more.length > 0) return null;
  if (segments.length === 1) {
    if (first === 'message:send') return { POST: (_q, body) => op('SendMessage', body()) };
    if (first === 'message:stream') return { POST: (_q, body) => op('SendStreamingMessage', body()) };
    if (first === 'extendedAgentCard') return { GET: () => op('GetExtendedAgentCard', {}) };
    if (first === 'tasks') return { GET: (q) => op('ListTasks', listQuery(q)) };
    return null;
  }
  if (first !== 'tasks' || id === undefined || id === '') return null;
  if (segments.length === 2) {
    const verb = /^(.*):(cancel|subscribe)$/s.exec(id);
    if (!verb) return { GET: (q) => op('GetTask', { id, historyLength: integer(q, 'historyLength') }) };
    const taskId = verb[1] ?? '';
    if (verb[2] === 'cancel') return { POST: (_q, body) => op('CancelTask', { ...body(), id: taskId }) };
    const subscribe = () => op('SubscribeToTask', { id: taskId });
    return { POST: subscribe, GET: subscribe };
  }
  if (third !== 'pushNotificationConfigs') return null;
  if (segments.length === 3) {
    return {
      POST: (_q, body) => op('CreateTaskPushNotificationConfig', pushBody(body(), id)),
      GET: (q) =>
        op('ListTaskPushNotificationConfigs', {
          taskId: id,
          pageSize: integer(q, 'pageSize'),
          pageToken: string(q, 'pageToken'),
        }),
    };
  }
  if (configId === undefined || configId === '') return null;
  return {
    GET: () => op('GetTaskPushNotificationConfig', { taskId: id, id: configId }),
    DELETE: () => op('DeleteTaskPushNotificationConfig', { taskId: id, id: configId }),
  };
}

/** A push config body: its `taskId`, when given, must be the path's. */
function pushBody(body: Record<string, unknown>, taskId: string) {
  if (body.taskId !== undefined && body.taskId !== '' && body.taskId !== taskId) {
    throw invalidParams('taskId', "taskId must be the path's task id");
  }
  return { ...body, taskId };
}

/** The operation (JSON-RPC method name) a method and path name, for the role check; undefined for none. */
export function restMethodOf(httpMethod: string, rest: string): string | undefined {
  const ops = pathOps(rest);
  const run = ops?.[httpMethod === 'HEAD' ? 'GET' : httpMethod];
  if (!run) return undefined;
  try {
    return run({}, () => ({})).method;
  } catch {
    return undefined;
  }
}

/**
 * The operation of a request of the HTTP+JSON binding.
 * @throws RpcError: unknown path (404), known path with another method (405), a body that is
 *   not JSON (415 for another media type, 400 otherwise), a malformed query parameter (400).
 */
export function restCall(
  httpMethod: string,
  rest: string,
  query: Query,
  contentType: string | undefined,
  rawBody: string,
): RestCall {
  const ops = pathOps(rest);
  if (!ops) throw new RpcError(RPC_ERRORS.methodNotFound, 'Not found: no A2A operation has this path');
  const run = ops[httpMethod === 'HEAD' ? 'GET' : httpMethod];
  if (!run) throw methodNotAllowed(Object.keys(ops).join(', '));
  return run(query, () => parseBody(contentType, rawBody));
}

const JSON_TYPES = new Set(['application/json', 'application/a2a+json']);

/** A POST body: no bytes is `{}`; otherwise a JSON object typed as JSON. */
function parseBody(contentType: string | undefined, raw: string): Record<string, unknown> {
  if (raw.length === 0) return {};
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type || !JSON_TYPES.has(type)) throw unsupportedMediaType();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new RpcError(RPC_ERRORS.parse, 'The body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RpcError(RPC_ERRORS.invalidRequest, 'The body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** ListTasks' query parameters, typed as its JSON-RPC params are. */
function listQuery(q: Query): Record<string, unknown> {
  const includeArtifacts = string(q, 'includeArtifacts');
  if (includeArtifacts !== undefined && includeArtifacts !== 'true' && includeArtifacts !== 'false') {
    throw invalidParams('includeArtifacts', 'includeArtifacts must be true or false');
  }
  return {
    contextId: string(q, 'contextId'),
    status: string(q, 'status'),
    pageSize: integer(q, 'pageSize'),
    pageToken: string(q, 'pageToken'),
    historyLength: integer(q, 'historyLength'),
    statusTimestampAfter: string(q, 'statusTimestampAfter'),
    includeArtifacts: includeArtifacts === undefined ? undefined : includeArtifacts === 'true',
  };
}

function string(q: Query, name: string): string | undefined {
  const value = Array.isArray(q[name]) ? (q[name] as unknown[])[0] : q[name];
  return typeof value === 'string' ? value : undefined;
}

function integer(q: Query, name: string): number | undefined {
  const value = string(q, name);
  if (value === undefined) return undefined;
  if (!/^-?\d{1,9}$/.test(value)) throw invalidParams(name, `${name} must be an integer`);
  return Number(value);
}

/**
 * The media type of an HTTP+JSON answer: `application/a2a+json`, unless the request's `Accept`
 * names `application/json` and none of `application/a2a+json`, `application/*`, `*\/*`.
 */
export function answerType(accept: string | undefined): string {
  const types = (accept ?? '').split(',').map((t) => t.split(';')[0]?.trim().toLowerCase());
  const plain = types.includes('application/json');
  const wide = types.some((t) => t === 'application/a2a+json' || t === 'application/*' || t === '*/*');
  return plain && !wide ? 'application/json' : 'application/a2a+json';
}
