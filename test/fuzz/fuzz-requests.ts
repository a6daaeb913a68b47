import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { anyJson, bodyValue, hostileValue, type JsonSchema, ODD_STRINGS, validValue } from './schema-arbitraries.js';

/** One operation of the OpenAPI document. */
export interface Operation {
  method: string;
  /** OpenAPI form: `/agent/{id}`. */
  path: string;
  params: Array<{ name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: JsonSchema }>;
  body: JsonSchema | undefined;
  /** Names of the security schemes that may authenticate it (empty: none needed). */
  security: string[];
}

/** The error shapes a path speaks (docs/api.md §2.2, docs/telemetry.md, docs/model-proxy.md, docs/mcp.md, docs/a2a.md). */
export type Protocol = 'taskhook' | 'openai' | 'otlp' | 'mcp' | 'a2a-rest' | 'oauth';

export function protocolOf(path: string): Protocol {
  if (path.startsWith('/spotlight/v1/')) return 'openai';
  if (path === '/mcp') return 'mcp';
  // The MCP authorization server's endpoints answer RFC 6749's {error, error_description} (docs/mcp.md).
  if (path.startsWith('/oauth/')) return 'oauth';
  // A2A's HTTP+JSON paths under an agent's interface URL (the card and the JSON-RPC endpoint speak the API's shapes).
  if (/^\/a2a\/\{agentId\}\/(?!\.well-known\/)/.test(path)) return 'a2a-rest';
  if (path.startsWith('/telemetry/ingest_http/')) return 'otlp';
  return 'taskhook';
}

interface OpenApiDoc {
  paths: Record<string, Record<string, OpenApiOperation>>;
}
interface OpenApiOperation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>;
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  security?: Array<Record<string, unknown>>;
}

/** Every operation of the document. */
export function operationsOf(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      out.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? [])
          .filter((p) => p.in === 'path' || p.in === 'query' || p.in === 'header')
          .map((p) => ({
            name: p.name,
            in: p.in as 'path' | 'query' | 'header',
            required: p.required ?? false,
            schema: p.schema ?? {},
          })),
        body: op.requestBody?.content?.['application/json']?.schema,
        security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      });
    }
  }
  return out;
}

/** Real ids the user owns, by kind: `keep` are used by every operation, `spare` only ones that may delete them. */
export interface Fixtures {
  jwt: string;
  key: string;
  ingestToken: string;
  triggerSecret: string;
  ids: Record<IdKind, { keep: string[]; spare: string[] }>;
}

export type IdKind =
  | 'agent'
  | 'goneAgent'
  | 'task'
  | 'finishedTask'
  | 'trigger'
  | 'platformKey'
  | 'ingestToken'
  | 'providerCredential'
  | 'delivery'
  | 'trace'
  | 'modelCall'
  | 'provider';

/** Which owned resource a path parameter names. */
export function idKindOf(op: Operation, name: string): IdKind | undefined {
  if (name === 'taskId') return op.path.endsWith('/events') ? 'finishedTask' : 'task';
  // An agent's task stream stays open while the agent lives: it is fuzzed on a deleted one (404).
  if (name === 'id' && op.path.endsWith('/tasks/events')) return 'goneAgent';
  if (name === 'triggerId' || name === 'trigger_uuid') return 'trigger';
  if (name === 'deliveryId') return 'delivery';
  if (name === 'traceId') return 'trace';
  if (name === 'provider') return 'provider';
  if (name === 'uuid' && op.path.startsWith('/auth/platform_keys')) return 'platformKey';
  if (name === 'uuid' && op.path.startsWith('/auth/ingest_tokens')) return 'ingestToken';
  if (name === 'uuid' && op.path.startsWith('/user/provider_credentials')) return 'providerCredential';
  if (name === 'id' && op.path.startsWith('/spotlight/calls')) return 'modelCall';
  if (name === 'id') return 'agent';
  return undefined;
}

/** Path segments a hostile client puts where an id belongs. */
const BAD_IDS = [
  'x'.repeat(2_000),
  'not-a-uuid',
  '0',
  '-1',
  '..',
  '%2e%2e',
  '%E0%A4%A',
  '%',
  '%00',
  'ABCDEFAB-CDEF-ABCD-EFAB-CDEFABCDEFAB',
  '00000000-0000-0000-0000-000000000000 ',
  '00000000-0000-0000-0000-0000000000001',
  '{id}',
];

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** The operation it was made for (`POST /agent`). */
  operation: string;
  protocol: Protocol;
}

/** Percent-encodes a path segment's UTF-8 bytes (a lone surrogate becomes U+FFFD, as on the wire). */
const encodeSegment = (v: string) =>
  [...Buffer.from(v, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');

/** Header values as they travel: no control characters, Latin-1 at most. */
const headerSafe = (s: string) => s.replace(/[^\x20-\x7e\xa0-\xff]/g, '?');

function pathValue(op: Operation, param: Operation['params'][number], fixtures: Fixtures): fc.Arbitrary<string> {
  const kind = idKindOf(op, param.name);
  const pool = kind ? fixtures.ids[kind] : undefined;
  const real = pool ? (op.method === 'DELETE' ? pool.spare : [...pool.keep, ...pool.spare]) : [];
  const options: Array<fc.WeightedArbitrary<string>> = [
    { arbitrary: validValue(param.schema).map(String), weight: 1 },
    { arbitrary: fc.uuid().map(String), weight: 1 },
    { arbitrary: fc.constantFrom(...BAD_IDS), weight: 1 },
    { arbitrary: fc.constantFrom(...ODD_STRINGS.filter((s) => s !== '')), weight: 1 },
  ];
  if (real.length) options.push({ arbitrary: fc.constantFrom(...real), weight: 8 });
  return fc.oneof(...options).map((v) => (BAD_IDS.includes(v) ? v : encodeSegment(v)));
}

function queryString(op: Operation): fc.Arbitrary<string> {
  const query = op.params.filter((p) => p.in === 'query');
  const entries = query.map((p) =>
    fc
      .tuple(
        fc.oneof(
          { arbitrary: fc.constant('absent' as const), weight: p.required ? 1 : 3 },
          { arbitrary: fc.constant('valid' as const), weight: 6 },
          { arbitrary: fc.constant('hostile' as const), weight: 2 },
          { arbitrary: fc.constant('twice' as const), weight: 1 },
        ),
        validValue(p.schema),
        hostileValue(p.schema),
      )
      .map(([how, valid, hostile]): Array<[string, string]> => {
        const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
        if (how === 'absent') return [];
        if (how === 'valid') return [[p.name, text(valid)]];
        if (how === 'hostile') return [[p.name, text(hostile).slice(0, 3_000)]];
        return [
          [p.name, text(valid)],
          [p.name, text(hostile).slice(0, 100)],
        ];
      }),
  );
  const extra = fc.option(fc.tuple(fc.constantFrom('extra', 'limit', 'page', '__proto__', ''), fc.string()), {
    freq: 4,
  });
  return fc.tuple(fc.tuple(...entries), extra).map(([pairs, more]) => {
    const all = pairs.flat();
    if (more) all.push(more);
    const qs = new URLSearchParams(all).toString();
    return qs ? `?${qs}` : '';
  });
}

type Credential = 'jwt' | 'key-x-api-key' | 'key-x-service-api-key' | 'key-bearer' | 'ingest';

function credentialHeaders(credential: Credential | 'none' | 'garbage', fixtures: Fixtures): Record<string, string> {
  switch (credential) {
    case 'jwt':
      return { authorization: `Bearer ${fixtures.jwt}` };
    case 'key-x-api-key':
      return { 'x-api-key': fixtures.key };
    case 'key-x-service-api-key':
      return { 'x-service-api-key': fixtures.key };
    case 'key-bearer':
      return { authorization: `Bearer ${fixtures.key}` };
    case 'ingest':
      return { authorization: fixtures.ingestToken };
    case 'garbage':
      return { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' };
    case 'none':
      return {};
  }
}

function credentialsFor(op: Operation): Credential[] {
  const out: Credential[] = [];
  if (op.security.includes('bearerJwt')) out.push('jwt');
  if (op.security.includes('apiKey')) out.push('key-x-api-key');
  if (op.security.includes('serviceApiKey')) out.push('key-x-service-api-key');
  if (op.security.includes('bearerApiKey')) out.push('key-bearer');
  if (op.security.includes('ingestToken')) out.push('ingest');
  return out;
}

const ALL_CREDENTIALS: Credential[] = ['jwt', 'key-x-api-key', 'key-x-service-api-key', 'key-bearer', 'ingest'];

function authHeaders(op: Operation, fixtures: Fixtures): fc.Arbitrary<Record<string, string>> {
  const right = credentialsFor(op);
  const wrong = ALL_CREDENTIALS.filter((c) => !right.includes(c));
  if (op.path.startsWith('/v1/webhooks/')) {
    return fc.oneof(
      { arbitrary: fc.constant({ 'x-webhook-secret': fixtures.triggerSecret }), weight: 6 },
      { arbitrary: fc.constant({}), weight: 1 },
      { arbitrary: fc.constant({ 'x-webhook-secret': 'whs_wrong' }), weight: 1 },
      { arbitrary: fc.constant({ 'x-hub-signature-256': `sha256=${'f'.repeat(64)}` }), weight: 1 },
      { arbitrary: fc.constant({ 'x-hub-signature-256': 'sha1=zz' }), weight: 1 },
    );
  }
  const options: Array<fc.WeightedArbitrary<Record<string, string>>> = [
    {
      arbitrary: fc.constantFrom('none' as const, 'garbage' as const).map((c) => credentialHeaders(c, fixtures)),
      weight: 1,
    },
  ];
  if (right.length) {
    options.push({ arbitrary: fc.constantFrom(...right).map((c) => credentialHeaders(c, fixtures)), weight: 12 });
  }
  if (wrong.length) {
    options.push({ arbitrary: fc.constantFrom(...wrong).map((c) => credentialHeaders(c, fixtures)), weight: 1 });
  }
  return fc.oneof(...options);
}

/** Headers a client may send that no route needs, with odd values. */
const ODD_HEADERS: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { arbitrary: fc.constant({}), weight: 12 },
  fc.constantFrom<Record<string, string>>(
    { 'x-request-id': 'x'.repeat(300) },
    { 'x-request-id': 'has spaces and ünïcode' },
    { 'x-request-id': '' },
    { accept: 'application/xml' },
    { accept: 'text/event-stream' },
    { 'accept-encoding': 'gzip, deflate, br' },
    { 'idempotency-key': 'k'.repeat(300) },
    { 'idempotency-key': '' },
    { traceparent: '00-zzzz-yyyy-01' },
    { traceparent: `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01` },
    { 'x-forwarded-for': '1.2.3.4, not-an-ip, ::1' },
    { origin: 'https://evil.example' },
    { 'last-event-id': '99999999999' },
    { 'last-event-id': '-1' },
    { 'x-taskhook-credential': 'no-such-credential' },
    { 'x-taskhook-task-id': 'not-a-task' },
    { 'x-github-delivery': 'd'.repeat(300) },
    { 'webhook-id': '\u00ff\u00fe' },
    { 'content-encoding': 'gzip' },
    { cookie: 'a=b; '.repeat(200) },
  ),
);

/** A flat copy of a long string: built once, so every request reuses the same memory. */
const flat = (text: string) => Buffer.from(text, 'utf8').toString('utf8');

/** Bodies that are not what their content type says, or are too big, too deep or oddly encoded. */
const ODD_BODIES: Array<{ payload?: string | Buffer; contentType?: string }> = [
  { payload: '{"a":', contentType: 'application/json' },
  { payload: '', contentType: 'application/json' },
  { payload: 'null', contentType: 'application/json' },
  { payload: '[]', contentType: 'application/json' },
  { payload: '"just a string"', contentType: 'application/json' },
  { payload: '{"a":1,"a":2}', contentType: 'application/json' },
  { payload: '{"n": 1e999999}', contentType: 'application/json' },
  { payload: '\ufeff{}', contentType: 'application/json' },
  { payload: flat(`${'['.repeat(300_000)}${']'.repeat(300_000)}`), contentType: 'application/json' },
  { payload: flat(`{"a":${'{"a":'.repeat(100)}1${'}'.repeat(100)}}`), contentType: 'application/json' },
  { payload: flat('x'.repeat(1_100_000)), contentType: 'application/json' },
  { payload: '{}', contentType: 'text/plain' },
  { payload: 'payload=%7B%7D', contentType: 'application/x-www-form-urlencoded' },
  { payload: '{}', contentType: 'application/json; charset=utf-16' },
  { payload: '{}', contentType: 'application/vnd.github+json' },
  { payload: '--x\r\n\r\n--x--', contentType: 'multipart/form-data; boundary=x' },
  { payload: Buffer.from([0x0a, 0x03, 0xff, 0xff, 0xff]), contentType: 'application/x-protobuf' },
  { payload: '{}', contentType: 'application/x-protobuf' },
  { payload: '{}' },
  { payload: Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0]), contentType: 'application/json' },
];

/** A body as sent: JSON of a generated value, or bytes that are not what the content type says. */
function bodyFor(op: Operation): fc.Arbitrary<{ payload?: string | Buffer; contentType?: string }> {
  const schema: JsonSchema | undefined =
    op.body ??
    (op.path.startsWith('/telemetry/ingest_http/v1/')
      ? {
          type: 'object',
          properties: { resourceSpans: { type: 'array' }, resourceLogs: { type: 'array' } },
        }
      : op.path.startsWith('/v1/webhooks/')
        ? {}
        : undefined);
  const json = (schema ? bodyValue(schema) : anyJson).map((v) => ({
    payload: JSON.stringify(v) ?? 'null',
    contentType: 'application/json',
  }));
  const odd = fc.constantFrom(...ODD_BODIES);
  if (schema) return fc.oneof({ arbitrary: json, weight: 10 }, { arbitrary: odd, weight: 2 });
  // Operations without a body: mostly none, sometimes one anyway.
  return fc.oneof(
    { arbitrary: fc.constant({}), weight: 10 },
    { arbitrary: json, weight: 1 },
    { arbitrary: odd, weight: 1 },
  );
}

/** A request for the operation: real or hostile ids, a query, credentials, headers and a body. */
export function requestFor(op: Operation, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const headerParams = op.params.filter((p) => p.in === 'header');
  const path = fc.tuple(...pathParams.map((p) => pathValue(op, p, fixtures))).map((values) => {
    let url = op.path;
    pathParams.forEach((p, i) => {
      url = url.replace(`{${p.name}}`, values[i] as string);
    });
    return url;
  });
  const declaredHeaders = fc
    .tuple(...headerParams.map((p) => fc.option(fc.oneof(validValue(p.schema), hostileValue(p.schema)), { freq: 2 })))
    .map((values) => {
      const out: Record<string, string> = {};
      headerParams.forEach((p, i) => {
        const v = values[i];
        if (v !== null && v !== undefined) out[p.name] = String(typeof v === 'string' ? v : JSON.stringify(v));
      });
      return out;
    });
  return fc
    .record({
      path,
      query: queryString(op),
      auth: authHeaders(op, fixtures),
      declared: declaredHeaders,
      odd: ODD_HEADERS,
      body: bodyFor(op),
    })
    .map(({ path: url, query, auth, declared, odd, body }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries({ ...declared, ...odd, ...auth })) headers[k] = headerSafe(v).slice(0, 8_000);
      if (body.contentType) headers['content-type'] = body.contentType;
      let payload = body.payload;
      // A long poll would hold the run for up to 30 s with nothing to learn: claims do not wait.
      if (op.path.endsWith('/tasks/claim') && typeof payload === 'string') {
        payload = payload.replace(/("wait_seconds":)([1-9]|[12][0-9]|30)(?=[,}])/, '$10');
      }
      return {
        method: op.method,
        url: `${url}${query}`,
        headers,
        ...(payload === undefined ? {} : { payload }),
        operation: `${op.method} ${op.path}`,
        protocol: protocolOf(op.path),
      };
    });
}

/** Requests spread over every operation; the ones that hash passwords (slow on purpose) less often. */
export function requestsFor(ops: Operation[], fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  const slow = new Set(['POST /auth/register', 'POST /auth/login', 'POST /auth/change_password']);
  return fc.oneof(
    ...ops.map((op) => ({ arbitrary: requestFor(op, fixtures), weight: slow.has(`${op.method} ${op.path}`) ? 1 : 5 })),
  );
}

const ERROR_CODES = new Set([
  'INVALID_REQUEST',
  'NOT_FOUND',
  'TASK_NOT_CANCELLABLE',
  'TASK_NOT_ACCEPTING_MESSAGES',
  'TASK_NOT_RUNNING',
  'AGENT_UNAVAILABLE',
  'TRIGGER_DISABLED',
  'RATE_LIMITED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'IDEMPOTENCY_KEY_REUSED',
  'LIMIT_EXCEEDED',
  'REQUEST_TIMEOUT',
  'CONFLICT',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
  'OAUTH_PROVIDER_UNAVAILABLE',
  'FORBIDDEN',
  'PERSONAL_WORKSPACE',
  'LAST_OWNER',
  'INVITATION_INVALID',
  'INVITATION_EMAIL_MISMATCH',
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const sameKeys = (v: Record<string, unknown>, allowed: string[], required: string[]) =>
  Object.keys(v).every((k) => allowed.includes(k)) && required.every((k) => k in v);

/** Section 2's envelope, exactly; null when it is one. */
function envelopeProblem(body: unknown, requestId: unknown): string | null {
  if (!isObject(body) || !sameKeys(body, ['success', 'error', 'meta'], ['success', 'error', 'meta'])) {
    return 'not the error envelope';
  }
  const { error, meta } = body;
  if (body.success !== false || !isObject(error) || !isObject(meta)) return 'envelope parts have the wrong types';
  if (!sameKeys(error, ['code', 'message', 'details'], ['code', 'message'])) return 'error has other fields';
  if (typeof error.code !== 'string' || !ERROR_CODES.has(error.code)) return `undocumented code ${String(error.code)}`;
  if (typeof error.message !== 'string' || error.message === '') return 'error.message is not a text';
  if (error.details !== undefined) {
    const d = error.details;
    if (!isObject(d) || !sameKeys(d, ['field', 'reason'], ['field', 'reason'])) return 'details is not {field, reason}';
    if (typeof d.field !== 'string' || typeof d.reason !== 'string') return 'details are not texts';
  }
  if (!sameKeys(meta, ['request_id', 'timestamp'], ['request_id', 'timestamp']))
    return 'meta is not {request_id, timestamp}';
  if (meta.request_id !== requestId) return 'meta.request_id is not the X-Request-Id header';
  if (typeof meta.timestamp !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(meta.timestamp)) {
    return 'meta.timestamp is not ISO 8601 with milliseconds';
  }
  return null;
}

const isFlat = (body: unknown) =>
  isObject(body) && sameKeys(body, ['error'], ['error']) && typeof body.error === 'string';

function openAiProblem(body: unknown): string | null {
  if (!isObject(body) || !isObject(body.error)) return 'not OpenAI\'s {"error": {…}}';
  if (typeof body.error.message !== 'string' || typeof body.error.type !== 'string') {
    return 'OpenAI error without message and type';
  }
  return null;
}

function parse(res: LightMyRequestResponse): { ok: true; body: unknown } | { ok: false } {
  try {
    return { ok: true, body: JSON.parse(res.body) };
  } catch {
    return { ok: false };
  }
}

/**
 * What is wrong with the answer, or null: a 5xx that is not a documented one, a missing request
 * id, or an error body not in the shape its path speaks.
 */
export function answerProblem(req: FuzzRequest, res: LightMyRequestResponse): string | null {
  const status = res.statusCode;
  const requestId = res.headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId === '') {
    return `no X-Request-Id header (${status}): ${res.body.slice(0, 300)}`;
  }
  if (status < 400) return null;
  const parsed = parse(res);
  const contentType = String(res.headers['content-type'] ?? '');
  if (req.protocol === 'otlp' && contentType.startsWith('application/x-protobuf') && status !== 401 && status !== 429) {
    return status >= 500 ? `${status} from OTLP ingest` : null;
  }
  if (!parsed.ok) return `error body is not JSON (${status}): ${res.body.slice(0, 200)}`;
  const body = parsed.body;
  const flat = isFlat(body);
  const envelope = envelopeProblem(body, requestId);
  const code = isObject(body) && isObject(body.error) ? body.error.code : undefined;

  // The only 5xx answers the documents promise for input a client controls.
  if (status >= 500) {
    if (status === 503 && envelope === null && code === 'AGENT_UNAVAILABLE') return null;
    if (req.protocol === 'openai' && (status === 502 || status === 504) && openAiProblem(body) === null) {
      if (code === 'upstream_unreachable' || code === 'upstream_timeout') return null;
    }
    return `${status} answer: ${res.body.slice(0, 300)}`;
  }
  // OAuth's error object, 401 included (RFC 6749 §5.2, RFC 7591 §3.2.2); what the request guard refuses before the
  // endpoint (rate limit, size) keeps the API's envelope.
  if (req.protocol === 'oauth' && envelope !== null) {
    const oauth =
      isObject(body) &&
      typeof body.error === 'string' &&
      Object.keys(body).every((k) => k === 'error' || k === 'error_description') &&
      (body.error_description === undefined || typeof body.error_description === 'string');
    if (oauth) return null;
    return `neither an OAuth error nor the envelope (${status}): ${res.body.slice(0, 200)}`;
  }
  if ((status === 401 || status === 403) && flat) return null;
  if (status === 401) return `401 not in the flat shape: ${res.body.slice(0, 200)}`;
  if (req.protocol === 'openai' && status !== 429) {
    const problem = openAiProblem(body);
    return problem && `${problem}: ${res.body.slice(0, 200)}`;
  }
  if (req.protocol === 'otlp' && status !== 429) {
    if (isObject(body) && typeof body.code === 'number' && typeof body.message === 'string') return null;
    return `not an OTLP status body: ${res.body.slice(0, 200)}`;
  }
  // The MCP transport's refusals (400, 404, 405, 406, 415) are JSON-RPC errors with a null id (docs/mcp.md);
  // what the request guard refuses before the transport (workspace, role, rate limit, size) keeps the API's
  // envelope, as on /a2a.
  if (req.protocol === 'mcp' && envelope !== null) {
    const rpc = isObject(body) && body.jsonrpc === '2.0' && isObject(body.error) ? body.error : null;
    if (rpc && typeof rpc.code === 'number' && typeof rpc.message === 'string') return null;
    return `neither a JSON-RPC error nor the envelope (${status}): ${res.body.slice(0, 200)}`;
  }
  // A2A's HTTP+JSON errors are google.rpc.Status bodies (docs/a2a.md); what the request guard refuses
  // before the binding (workspace, role, the agent, rate limit, size) keeps the API's envelope.
  if (req.protocol === 'a2a-rest' && envelope !== null) {
    const error = isObject(body) && isObject(body.error) ? body.error : null;
    if (error && error.code === status && typeof error.status === 'string' && typeof error.message === 'string') {
      return null;
    }
    return `neither an A2A error nor the envelope (${status}): ${res.body.slice(0, 200)}`;
  }
  return envelope && `${envelope} (${status}): ${res.body.slice(0, 300)}`;
}

/** A short description of a request for failure messages (long values cut). */
export function describeRequest(req: FuzzRequest): string {
  const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} characters)` : s);
  const payload = req.payload === undefined ? '' : Buffer.isBuffer(req.payload) ? '<bytes>' : cut(req.payload);
  return `${req.method} ${cut(req.url)}\n  headers: ${cut(JSON.stringify(req.headers))}\n  body: ${payload}`;
}

/** A fresh id that names nothing. */
export const nothing = () => randomUUID();
