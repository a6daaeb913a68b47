import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';
import { errorOf, retryAfterOf, TaskhookConnectionError, TaskhookError } from './errors.js';
import { VERSION } from './version.js';

/** How a client or worker reaches the API. Every field has a default. */
export interface ClientOptions {
  /** Default: TASKHOOK_URL, else http://localhost:8080. A path prefix is kept. */
  baseUrl?: string;
  /** A platform API key (sk_…) or a session JWT; default TASKHOOK_API_KEY. */
  apiKey?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** More attempts for a request that is safe to repeat; default 2. */
  maxRetries?: number;
  /** Per request without an answer; default 60000. */
  timeoutMs?: number;
}

/** The options with their defaults applied. */
export interface Resolved {
  baseUrl: string;
  apiKey: string;
  headers: Record<string, string>;
  maxRetries: number;
  timeoutMs: number;
}

/** Applies the defaults (arguments win over the environment); no key at all is a TypeError. */
export function resolveOptions(options: ClientOptions = {}): Resolved {
  const baseUrl = options.baseUrl ?? process.env.TASKHOOK_URL ?? 'http://localhost:8080';
  const apiKey = options.apiKey ?? process.env.TASKHOOK_API_KEY;
  if (!apiKey) throw new TypeError('No API key: pass apiKey or set TASKHOOK_API_KEY');
  const maxRetries = options.maxRetries ?? 2;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new TypeError('maxRetries must be an integer ≥ 0');
  return {
    baseUrl: baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`,
    apiKey,
    headers: options.headers ?? {},
    maxRetries,
    timeoutMs: options.timeoutMs ?? 60_000,
  };
}

/** The headers every request carries. */
export function baseHeaders(opts: Resolved): Record<string, string> {
  return {
    'user-agent': `taskhook-js/${VERSION} node/${process.versions.node}`,
    authorization: `Bearer ${opts.apiKey}`,
    ...opts.headers,
  };
}

export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Safe to repeat: retried on no answer and on 408, 429, 500, 502, 503, 504. */
  retry?: boolean;
  timeoutMs?: number;
}

const RETRIED = new Set([408, 429, 500, 502, 503, 504]);
/** The Retry-After seconds of an error answer, whatever its status (a 503 may carry one too). */
const retryAfterOfError = new WeakMap<TaskhookError, number>();

/** The wait before retry `n` (1, 2, …): Retry-After when given (≤ 60 s), else backoff with jitter (≤ 8 s). */
export function retryDelayMs(n: number, retryAfter: number | undefined): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, 60) * 1000;
  const base = 500 * 2 ** (n - 1);
  return Math.min(base * (1 + Math.random() * 0.25), 8000);
}

/** Whether a failed attempt may be repeated. */
export function isRetriable(err: unknown): boolean {
  if (err instanceof TaskhookConnectionError) return true;
  return err instanceof TaskhookError && err.status !== undefined && RETRIED.has(err.status);
}

/** Waits `ms`, or less when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A JSON call to the API; a non-2xx answer throws the TaskhookError subclass of its status. */
export async function callApi<T>(
  opts: Resolved,
  method: string,
  path: string,
  body?: unknown,
  extra: CallOptions = {},
): Promise<{ status: number; body: T; headers: IncomingHttpHeaders }> {
  const attempts = extra.retry ? opts.maxRetries + 1 : 1;
  for (let n = 1; ; n++) {
    try {
      return await attempt<T>(opts, method, path, body, extra);
    } catch (err) {
      if (n >= attempts || !isRetriable(err) || extra.signal?.aborted) throw err;
      const retryAfter = err instanceof TaskhookError ? retryAfterOfError.get(err) : undefined;
      await sleep(retryDelayMs(n, retryAfter), extra.signal);
      if (extra.signal?.aborted) throw err;
    }
  }
}

async function attempt<T>(
  opts: Resolved,
  method: string,
  path: string,
  body: unknown,
  extra: CallOptions,
): Promise<{ status: number; body: T; headers: IncomingHttpHeaders }> {
  const headers: Record<string, string> = { ...baseHeaders(opts), accept: 'application/json', ...extra.headers };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const timeoutMs = extra.timeoutMs ?? opts.timeoutMs;
  let res: Awaited<ReturnType<typeof request>>;
  let text: string;
  // undici's request rather than fetch: a worker makes several calls per task, and fetch costs
  // several times the CPU per call. It follows no redirect (none is ever followed: a 3xx is thrown as
  // a TaskhookError with its status, so the key never goes to a Location the answer names).
  try {
    res = await request(new URL(path, opts.baseUrl), {
      method: method as 'GET',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: extra.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    text = await res.body.text();
  } catch (err) {
    if (extra.signal?.aborted) throw err;
    throw new TaskhookConnectionError({ message: `No answer from ${opts.baseUrl}: ${(err as Error).message}` });
  }
  const ok = res.statusCode >= 200 && res.statusCode < 300;
  let parsed: unknown;
  try {
    parsed = text ? (JSON.parse(text) as unknown) : undefined;
  } catch (err) {
    // A proxy or load balancer may answer an error in HTML: still an error with the status.
    if (ok) throw err;
    parsed = text;
  }
  if (!ok) {
    const requestId = res.headers['x-request-id'];
    const err = errorOf(res.statusCode, parsed, {
      requestId: Array.isArray(requestId) ? requestId[0] : requestId,
      retryAfter: res.headers['retry-after'],
    });
    const retryAfter = retryAfterOf(res.headers['retry-after']);
    if (retryAfter !== undefined) retryAfterOfError.set(err, retryAfter);
    throw err;
  }
  return { status: res.statusCode, body: parsed as T, headers: res.headers };
}

/** Path segments are UUIDs, but encode them anyway. */
export const seg = encodeURIComponent;
