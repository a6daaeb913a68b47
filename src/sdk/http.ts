import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';

/** An error answer of the taskhook API. */
export class TaskhookError extends Error {
  constructor(
    readonly status: number,
    /** The envelope's error code (e.g. TASK_NOT_RUNNING), or undefined for flat auth errors. */
    readonly code: string | undefined,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'TaskhookError';
  }
}

export interface HttpOptions {
  baseUrl: string;
  /** A platform API key (sk_service_…) or a session JWT. */
  apiKey: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

/** A JSON call to the API; non-2xx answers throw TaskhookError. */
export async function callApi<T>(
  opts: HttpOptions,
  method: string,
  path: string,
  body?: unknown,
  extra: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<{ status: number; body: T; headers: IncomingHttpHeaders }> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${opts.apiKey}`,
    accept: 'application/json',
    ...opts.headers,
    ...extra.headers,
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  // undici's request rather than fetch: a worker makes several calls per task, and fetch costs
  // several times the CPU per call (docs/benchmarks.md). It follows no redirect.
  const res = await request(new URL(path, opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`), {
    method: method as 'GET',
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: extra.signal,
  });
  const ok = res.statusCode >= 200 && res.statusCode < 300;
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = text ? (JSON.parse(text) as unknown) : undefined;
  } catch (err) {
    // A proxy or load balancer may answer an error in HTML: still a TaskhookError with the status.
    if (ok) throw err;
    parsed = text;
  }
  if (!ok) throw errorOf(res.statusCode, parsed);
  return { status: res.statusCode, body: parsed as T, headers: res.headers };
}

/** The TaskhookError of an error answer: the envelope `{error: {code, message}}` or a flat `{error: "…"}`. */
export function errorOf(status: number, body: unknown): TaskhookError {
  const err = (body as { error?: unknown } | undefined)?.error;
  const code = typeof err === 'object' && err ? (err as { code?: string }).code : undefined;
  const message =
    typeof err === 'string' ? err : ((err as { message?: string } | undefined)?.message ?? `HTTP ${status}`);
  return new TaskhookError(status, code, message, body);
}

/** Path segments are UUIDs, but encode them anyway. */
export const seg = encodeURIComponent;
