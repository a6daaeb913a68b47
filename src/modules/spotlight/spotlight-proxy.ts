import type { Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../lib/outbound.js';
import type { OpenedCredential } from '../providers/providers-service.js';
import { openAiError, ProxyError, upstreamErrorBody } from './spotlight-fns.js';
import type { CallError } from './spotlight-repo.js';

/** Largest upstream body the proxy holds in memory (non-streamed answers are read whole to count usage). */
const MAX_UPSTREAM_BODY = 64 * 1024 * 1024;
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
  /** When the answer ended (ms). */
  endedAt: number;
}

export interface UpstreamDeps {
  dispatcher: Dispatcher;
  outbound: OutboundPolicy;
  timeoutMs: number;
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

const failureAnswer = (f: Failure) =>
  new ProxyError(f.status, openAiError(`Upstream ${f.message}`, 'upstream_error', f.code));

/** Reads a whole body, at most MAX_UPSTREAM_BODY bytes. */
async function readAll(body: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_UPSTREAM_BODY) {
      body.destroy();
      throw Object.assign(new Error('upstream body too large'), { code: 'UPSTREAM_TOO_LARGE' });
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
      dispatcher: deps.dispatcher,
      signal: init.signal,
    });
  } catch (err) {
    throw Object.assign(failureAnswer(failureOf(err, init.signal.aborted)), { cause: err });
  }
}

/** Reads a non-streamed answer whole (bounded by the timeout) and relays it. */
export async function relayWhole(
  deps: UpstreamDeps,
  res: Dispatcher.ResponseData,
  signal: AbortSignal,
): Promise<{ answer: ProxyAnswer; text: string; errorMessage: string | null }> {
  const timer = setTimeout(
    () => res.body.destroy(Object.assign(new Error('body timeout'), { code: 'UND_ERR_BODY_TIMEOUT' })),
    deps.timeoutMs,
  );
  let raw: Buffer;
  try {
    raw = await readAll(res.body);
  } catch (err) {
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

/** The outcome of a failed exchange as recorded. */
export function failedOutcome(err: unknown, now: number): CallOutcome {
  const status = err instanceof ProxyError ? err.status : 502;
  const code = (err instanceof ProxyError ? err.body.error.code : 'upstream_unreachable') as CallError['code'];
  return {
    statusCode: status,
    error: { code, message: err instanceof Error ? err.message : String(err) },
    responseModel: null,
    responseId: null,
    finishReasons: [],
    timeToFirstTokenMs: null,
    inputTokens: null,
    outputTokens: null,
    endedAt: now,
  };
}
