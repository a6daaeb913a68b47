import type { Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../../lib/outbound.js';
import type { FairOutbound } from '../../../lib/outbound-fair.js';
import type { OpenedCredential } from '../../providers/providers-service.js';
import type { CallError } from '../usage/calls-rows.js';
import type { Protocol } from './protocols/protocol.js';
import { openAiError, ProxyError, upstreamErrorBody } from './proxy-fns.js';

const RELAYED_HEADERS = ['retry-after', 'retry-after-ms'];

/** What the caller is answered: status, headers, and a body (a live stream for SSE). */
export interface ProxyAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer | Readable;
}

/** What the call record learns from the exchange. */
export interface CallOutcome {
  statusCode: number;
  error: CallError | null;
  responseModel: string | null;
  responseId: string | null;
  finishReasons: string[];
  timeToFirstTokenMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** Input served from / written to the provider's prompt cache (part of inputTokens); null when not reported. */
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  /** The part of cacheWriteTokens written to Anthropic's 1-hour cache (priced apart); 0 when not reported. */
  cacheWrite1hTokens: number;
  /**
   * Set when the upstream answered 2xx but no usage object came (a stream that ended, broke or was
   * left before its usage chunk; an answer without usage): the characters of generated text
   * received, from which the record's tokens are estimated. Null otherwise.
   */
  withoutUsage: { outputChars: number } | null;
  /** When the answer ended (ms). */
  endedAt: number;
}

/** How much of an upstream answer the proxy holds or relays (bytes as received). */
export interface ProxyLimits {
  /** A non-streamed answer, read whole to count its usage. */
  maxAnswerBytes: number;
  /** One SSE event of a stream (its text up to the blank line). */
  maxEventBytes: number;
  /** A whole streamed answer. */
  maxStreamBytes: number;
}

export interface UpstreamDeps {
  /** Per-workspace lanes over the guarded pool: one workspace holds only its share of the connections. */
  dispatcher: Pick<FairOutbound, 'forAccount'>;
  outbound: OutboundPolicy;
  timeoutMs: number;
  limits: ProxyLimits;
  now: () => number;
}

type Failure = { status: number; code: CallError['code']; message: string };

/** Classifies a failed upstream exchange; `aborted` means the caller went away. */
function failureOf(err: unknown, aborted: boolean): Failure {
  const code = (err as { code?: string }).code ?? '';
  if (aborted) return { status: 499, code: 'client_closed', message: 'the caller closed the connection' };
  if (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'ETIMEOUT'
  ) {
    return { status: 504, code: 'upstream_timeout', message: 'the upstream did not answer in time' };
  }
  const reason =
    err instanceof OutboundUrlError || code === 'EPRIVATEADDRESS'
      ? 'refused: private address'
      : code || 'connection failed';
  return { status: 502, code: 'upstream_unreachable', message: `the upstream could not be reached (${reason})` };
}

/** The failure as the caller reads it: its message is a sentence ("The upstream could not be reached …"). */
const failureAnswer = (f: Failure) =>
  new ProxyError(
    f.status,
    openAiError(`${f.message[0]?.toUpperCase()}${f.message.slice(1)}`, 'upstream_error', f.code),
  );

/**
 * Reads a whole body of at most `maxBytes`.
 * @throws ProxyError 502 `upstream_error` naming the limit when the body is larger.
 */
async function readAll(body: Readable, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      body.destroy();
      const message = `Upstream answer is larger than ${maxBytes} bytes (the proxy's limit for a non-streamed answer)`;
      throw new ProxyError(502, openAiError(message, 'upstream_error', 'upstream_error'));
    }
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

function relayedHeaders(headers: Dispatcher.ResponseData['headers'], fallbackType: string) {
  const out: Record<string, string> = {};
  const type = headers['content-type'];
  out['content-type'] = typeof type === 'string' ? type : fallbackType;
  for (const name of RELAYED_HEADERS) {
    const v = headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}

/**
 * One upstream exchange: POST/GET `{base_url}{path}` with the credential's key and nothing of the
 * caller's. The URL is checked again here (a literal address never reaches the connect-time
 * lookup). Non-streamed bodies are bounded as a whole by the timeout; streams per gap (undici).
 * @throws ProxyError 502/504 when the upstream cannot be reached or does not answer in time.
 */
export async function callUpstream(
  deps: UpstreamDeps,
  credential: OpenedCredential,
  path: string,
  init: { method: 'GET' | 'POST'; body?: string; signal: AbortSignal },
): Promise<Dispatcher.ResponseData> {
  const url = `${credential.baseUrl}${path}`;
  try {
    await checkOutboundUrl(url, deps.outbound);
    return await request(url, {
      method: init.method,
      headers: {
        authorization: `Bearer ${credential.apiKey}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        accept: init.method === 'GET' ? 'application/json' : 'application/json, text/event-stream',
      },
      body: init.body,
      dispatcher: deps.dispatcher.forAccount(credential.workspaceUuid),
      signal: init.signal,
    });
  } catch (err) {
    throw Object.assign(failureAnswer(failureOf(err, init.signal.aborted)), { cause: err });
  }
}

/**
 * Reads a non-streamed answer whole (bounded by the timeout and by `maxBytes`) and relays it.
 * @throws ProxyError 502 when the body is larger than `maxBytes`, 504/502 when reading it fails.
 */
export async function relayWhole(
  deps: UpstreamDeps,
  res: Dispatcher.ResponseData,
  signal: AbortSignal,
  maxBytes = deps.limits.maxAnswerBytes,
): Promise<{ answer: ProxyAnswer; text: string; errorMessage: string | null }> {
  const timer = setTimeout(
    () => res.body.destroy(Object.assign(new Error('body timeout'), { code: 'UND_ERR_BODY_TIMEOUT' })),
    deps.timeoutMs,
  );
  let raw: Buffer;
  try {
    raw = await readAll(res.body, maxBytes);
  } catch (err) {
    if (err instanceof ProxyError && !signal.aborted) throw err;
    throw failureAnswer(failureOf(err, signal.aborted));
  } finally {
    clearTimeout(timer);
  }
  const text = raw.toString('utf8');
  if (res.statusCode >= 200 && res.statusCode < 300) {
    const answer = { status: res.statusCode, headers: relayedHeaders(res.headers, 'application/json'), body: raw };
    return { answer, text, errorMessage: null };
  }
  const relayed = upstreamErrorBody(res.statusCode, text);
  const headers = relayedHeaders(res.headers, 'application/json');
  if (!relayed.json) headers['content-type'] = 'application/json';
  return { answer: { status: res.statusCode, headers, body: relayed.body }, text, errorMessage: relayed.message };
}

/**
 * The outcome of a failed exchange as recorded. `upstreamStatus` is the upstream's status when its
 * headers came: a 2xx whose body then failed (the caller left, it broke, it was too large) carried
 * no usage the proxy could read, so its tokens are estimated (no generated text counted).
 */
export function failedOutcome(err: unknown, now: number, upstreamStatus: number | null = null): CallOutcome {
  const status = err instanceof ProxyError ? err.status : 502;
  const code = (err instanceof ProxyError ? err.body.error.code : 'upstream_unreachable') as CallError['code'];
  const outcome = bareOutcome(status, { code, message: err instanceof Error ? err.message : String(err) }, now);
  const answered = upstreamStatus !== null && upstreamStatus >= 200 && upstreamStatus < 300;
  return answered ? { ...outcome, withoutUsage: { outputChars: 0 } } : outcome;
}

/** An outcome with nothing read from an answer: no model, tokens or timing (a failure, a refusal, a hit). */
export function bareOutcome(statusCode: number, error: CallError | null, now: number): CallOutcome {
  return {
    statusCode,
    error,
    responseModel: null,
    responseId: null,
    finishReasons: [],
    timeToFirstTokenMs: null,
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    cacheWrite1hTokens: 0,
    withoutUsage: null,
    endedAt: now,
  };
}

/** The record's view of a non-streamed answer, read by its protocol. */
export function wholeOutcome(
  protocol: Pick<Protocol, 'wholeFacts'>,
  status: number,
  text: string,
  errorMessage: string | null,
  now: number,
): CallOutcome {
  const ok = status >= 200 && status < 300;
  let facts = protocol.wholeFacts(null);
  if (ok) {
    try {
      facts = protocol.wholeFacts(JSON.parse(text));
    } catch {
      // not JSON: relayed as it is, nothing to count
    }
  }
  const failure = ok ? facts.failure : (errorMessage ?? `upstream answered HTTP ${status}`);
  return {
    statusCode: status,
    error: failure === null ? null : { code: 'upstream_error', message: failure },
    responseModel: facts.model,
    responseId: facts.id,
    finishReasons: facts.finishReasons,
    timeToFirstTokenMs: null,
    inputTokens: facts.usage?.input ?? null,
    outputTokens: facts.usage?.output ?? null,
    cacheReadTokens: facts.usage?.cacheRead ?? null,
    cacheWriteTokens: facts.usage?.cacheWrite ?? null,
    cacheWrite1hTokens: facts.usage?.cacheWrite1h ?? 0,
    withoutUsage: ok && facts.usage === null ? { outputChars: facts.outputChars } : null,
    endedAt: now,
  };
}
