import { MAX_JSON_DEPTH } from '../../lib/json-depth.js';
import { MAX_MESSAGE_CHARS, MAX_METADATA_BYTES } from '../tasks/tasks-schemas.js';
import { invalidParams, RPC_ERRORS, RpcError } from './a2a-errors.js';
import { type PushConfigInput, parsePushConfig } from './a2a-push-fns.js';
import { A2A_STATES, type TaskState } from './a2a-task-fns.js';

export type RpcId = string | number | null;

export interface RpcRequest {
  id: RpcId;
  method: string;
  params: Record<string, unknown>;
}

const JSON_TYPES = new Set(['application/json', 'application/a2a+json']);

/** The JSON-RPC error response for `error`, for the request `id` (null when it is not known). */
export function errorResponse(id: RpcId, error: RpcError) {
  const details = error.details();
  return {
    jsonrpc: '2.0' as const,
    id,
    error: { code: error.code, message: error.message, ...(details.length > 0 ? { data: details } : {}) },
  };
}

export function resultResponse(id: RpcId, result: unknown) {
  return { jsonrpc: '2.0' as const, id, result };
}

/**
 * Reads a JSON-RPC 2.0 request from the raw body. Batches, notifications (no `id`) and
 * positional params are refused: A2A calls are single requests with named params.
 * @returns the request, or the error to answer with the request's id when it could be read.
 */
export function parseRequest(
  contentType: string | undefined,
  body: string,
): RpcRequest | { id: RpcId; error: RpcError } {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type || !JSON_TYPES.has(type)) {
    return { id: null, error: new RpcError(RPC_ERRORS.invalidRequest, 'Content-Type must be application/json') };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { id: null, error: new RpcError(RPC_ERRORS.parse, 'Parse error: the body is not valid JSON') };
  }
  if (Array.isArray(parsed)) {
    return { id: null, error: new RpcError(RPC_ERRORS.invalidRequest, 'Batch requests are not supported') };
  }
  if (!isObject(parsed)) {
    return { id: null, error: new RpcError(RPC_ERRORS.invalidRequest, 'A request must be a JSON object') };
  }
  const id = isRpcId(parsed.id) ? parsed.id : null;
  const bad = (reason: string) => ({
    id,
    error: new RpcError(RPC_ERRORS.invalidRequest, `Invalid request: ${reason}`),
  });
  if (parsed.jsonrpc !== '2.0') return bad('jsonrpc must be "2.0"');
  if (!('id' in parsed)) return bad('id is required (notifications are not supported)');
  if (!isRpcId(parsed.id)) return bad('id must be a string, a number or null');
  if (typeof parsed.method !== 'string' || parsed.method === '') return bad('method must be a non-empty string');
  if (parsed.params !== undefined && !isObject(parsed.params)) {
    return { id, error: invalidParams('params', 'params must be an object') };
  }
  return { id, method: parsed.method, params: (parsed.params as Record<string, unknown> | undefined) ?? {} };
}

/** The parts of an incoming message: its text for the task, or the error to answer. */
export interface IncomingMessage {
  messageId: string;
  taskId: string | undefined;
  contextId: string | undefined;
  text: string;
  metadata: Record<string, unknown> | undefined;
}

export interface SendParams {
  message: IncomingMessage;
  returnImmediately: boolean;
  historyLength: number | undefined;
  /** `configuration.taskPushNotificationConfig`: stored on the task in the send's transaction. */
  push: PushConfigInput | undefined;
}

/**
 * The params of SendMessage and SendStreamingMessage. The task's message is the text parts,
 * with `data` parts as compact JSON, joined by "\n" in their order.
 * @throws RpcError -32602 for a missing or malformed field, -32005 for `url` or `raw` parts.
 */
export function parseSendParams(params: Record<string, unknown>): SendParams {
  const message = params.message;
  if (!isObject(message)) throw invalidParams('message', 'message is required');
  const messageId = message.messageId;
  if (typeof messageId !== 'string' || messageId === '' || messageId.length > 256) {
    throw invalidParams('message.messageId', 'message.messageId is required (a string of 1 to 256 characters)');
  }
  // A2A 1.0 makes `role` a required field of every Message: a message that says nothing is refused.
  if (message.role !== 'ROLE_USER') {
    throw invalidParams(
      'message.role',
      message.role === undefined ? 'message.role is required (ROLE_USER)' : 'message.role must be ROLE_USER',
    );
  }
  const taskId = optionalString(message.taskId, 'message.taskId');
  const contextId = optionalString(message.contextId, 'message.contextId');
  if (!Array.isArray(message.parts) || message.parts.length === 0)
    throw invalidParams('message.parts', 'message.parts is required');
  const pieces: string[] = [];
  for (const part of message.parts) {
    if (!isObject(part)) throw invalidParams('message.parts', 'each part must be an object');
    if (part.url !== undefined || part.raw !== undefined) {
      throw new RpcError(
        RPC_ERRORS.contentTypeNotSupported,
        'Content type not supported: only text and data parts are accepted',
      );
    }
    if (typeof part.text === 'string') pieces.push(part.text);
    else if (part.data !== undefined && part.data !== null) pieces.push(JSON.stringify(part.data));
    else throw invalidParams('message.parts', 'each part needs text or data');
  }
  const text = pieces.join('\n');
  if (text.length === 0) throw invalidParams('message.parts', 'the message has no text');
  if (text.length > MAX_MESSAGE_CHARS)
    throw invalidParams('message.parts', `the message is longer than ${MAX_MESSAGE_CHARS} characters`);
  let metadata: Record<string, unknown> | undefined;
  if (message.metadata !== undefined && message.metadata !== null) {
    if (!isObject(message.metadata)) throw invalidParams('message.metadata', 'message.metadata must be an object');
    if (Buffer.byteLength(JSON.stringify(message.metadata)) > MAX_METADATA_BYTES) {
      throw invalidParams('message.metadata', `message.metadata is larger than ${MAX_METADATA_BYTES} bytes as JSON`);
    }
    metadata = message.metadata;
  }
  const configuration = params.configuration ?? {};
  if (!isObject(configuration)) throw invalidParams('configuration', 'configuration must be an object');
  const returnImmediately = configuration.returnImmediately ?? false;
  if (typeof returnImmediately !== 'boolean')
    throw invalidParams('configuration.returnImmediately', 'configuration.returnImmediately must be a boolean');
  const pushField = 'configuration.taskPushNotificationConfig';
  let push: PushConfigInput | undefined;
  if (configuration.taskPushNotificationConfig !== undefined && configuration.taskPushNotificationConfig !== null) {
    push = parsePushConfig(configuration.taskPushNotificationConfig, `${pushField}.`);
    if (push.taskId !== '' && push.taskId !== taskId) {
      throw invalidParams(`${pushField}.taskId`, `${pushField}.taskId must be empty or message.taskId`);
    }
  }
  return {
    message: { messageId, taskId, contextId, text, metadata },
    push,
    returnImmediately,
    historyLength: parseHistoryLength(configuration.historyLength, 'configuration.historyLength'),
  };
}

/** `{id, historyLength?}` of GetTask, CancelTask and SubscribeToTask. */
export function parseTaskIdParams(params: Record<string, unknown>): { id: string; historyLength: number | undefined } {
  if (typeof params.id !== 'string' || params.id === '') throw invalidParams('id', 'id is required (the task id)');
  return { id: params.id, historyLength: parseHistoryLength(params.historyLength, 'historyLength') };
}

export interface ListParams {
  contextId: string | undefined;
  state: TaskState | undefined;
  pageSize: number;
  offset: number;
  historyLength: number | undefined;
  /** Only tasks whose status timestamp is later than this (an ISO timestamp in ms, UTC). */
  statusTimestampAfter: string | undefined;
  /** Artifacts are left out of a listed task unless asked for. */
  includeArtifacts: boolean;
}

/** An RFC 3339 timestamp, the JSON form of a protobuf Timestamp. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** `statusTimestampAfter` as an ISO timestamp in UTC with milliseconds (what the tasks hold), or undefined. */
function parseTimestampAfter(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const ms = typeof value === 'string' && RFC3339.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw invalidParams(
      'statusTimestampAfter',
      'statusTimestampAfter must be an RFC 3339 timestamp, e.g. 2026-01-31T09:00:00Z',
    );
  }
  return new Date(ms).toISOString();
}

const MAX_OFFSET = 1_000_000;

/** ListTasks params; `pageToken` is the opaque token of the previous answer. */
export function parseListParams(params: Record<string, unknown>): ListParams {
  const contextId = optionalString(params.contextId, 'contextId');
  let state: TaskState | undefined;
  // ProtoJSON's zero value of the enum means no filter.
  if (params.status !== undefined && params.status !== 'TASK_STATE_UNSPECIFIED') {
    if (typeof params.status !== 'string' || !(A2A_STATES as readonly string[]).includes(params.status)) {
      throw invalidParams('status', `status must be one of ${A2A_STATES.join(', ')}`);
    }
    state = params.status as TaskState;
  }
  const pageSize = params.pageSize ?? 50;
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw invalidParams('pageSize', 'pageSize must be an integer from 1 to 100');
  }
  let offset = 0;
  if (params.pageToken !== undefined && params.pageToken !== '') {
    const token = params.pageToken;
    const decoded = typeof token === 'string' ? Buffer.from(token, 'base64url').toString() : '';
    const match = /^o:(\d{1,7})$/.exec(decoded);
    if (!match || Number(match[1]) > MAX_OFFSET)
      throw invalidParams('pageToken', 'pageToken is not one this server issued');
    offset = Number(match[1]);
  }
  const includeArtifacts = params.includeArtifacts ?? false;
  if (typeof includeArtifacts !== 'boolean')
    throw invalidParams('includeArtifacts', 'includeArtifacts must be a boolean');
  return {
    contextId,
    state,
    pageSize,
    offset,
    historyLength: parseHistoryLength(params.historyLength, 'historyLength'),
    statusTimestampAfter: parseTimestampAfter(params.statusTimestampAfter),
    includeArtifacts,
  };
}

/** The token of the page that starts at `offset` ("" when there is none). */
export function pageToken(offset: number, total: number): string {
  return offset < total && offset <= MAX_OFFSET ? Buffer.from(`o:${offset}`).toString('base64url') : '';
}

function parseHistoryLength(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalidParams(field, `${field} must be a non-negative integer`);
  }
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 256)
    throw invalidParams(field, `${field} must be a string of at most 256 characters`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRpcId(value: unknown): value is RpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) || value === null;
}

export const TOO_DEEP = new RpcError(
  RPC_ERRORS.invalidRequest,
  `Invalid request: the body nests deeper than ${MAX_JSON_DEPTH} levels`,
);
