import { Agent, type Dispatcher, request } from 'undici';
import { AppError, AuthError } from '../../http/errors.js';
import { oauthErrorCode } from './oauth-fns.js';

/**
 * Calls to the identity providers. Their URLs are the operator's configuration, not user input,
 * so they do not go through the SSRF guard of lib/outbound.ts (a self-hosted identity provider on
 * a private network is normal); each call is bounded to 10 seconds, redirects are not followed and
 * answers are capped in size.
 */

export const PROVIDER_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface ProviderAnswer {
  status: number;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

/** The one dispatcher for provider calls, with every phase bounded. */
export function createProviderDispatcher(timeoutMs = PROVIDER_TIMEOUT_MS): Dispatcher {
  return new Agent({ connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/** 502 OAUTH_PROVIDER_UNAVAILABLE for the provider. */
export function unavailable(label: string, what: string): AppError {
  return new AppError('OAUTH_PROVIDER_UNAVAILABLE', `${label} is unavailable: ${what}; try again shortly`);
}

/** 401 `<Provider> login failed: <reason>`. */
export function loginFailed(label: string, reason: string): AuthError {
  return new AuthError(401, `${label} login failed: ${reason}`);
}

async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new Error('answer too large');
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One request to a provider.
 * @throws AppError OAUTH_PROVIDER_UNAVAILABLE on a network error, a timeout or an oversized answer.
 */
export async function callProvider(
  dispatcher: Dispatcher,
  label: string,
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; form?: Record<string, string> },
): Promise<ProviderAnswer> {
  const headers: Record<string, string> = { 'user-agent': 'taskhook', ...init.headers };
  const body = init.form ? new URLSearchParams(init.form).toString() : undefined;
  if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  let text: string;
  let status: number;
  try {
    const res = await request(url, {
      method: init.method,
      headers,
      body,
      dispatcher,
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
    });
    status = res.statusCode;
    text = await readCapped(res.body);
  } catch {
    throw unavailable(label, 'no answer');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, json };
}

/** A JSON object, or null. */
export function asObject(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/**
 * Reads a token endpoint's answer: the JSON object of a success, a 401 for a refusal that names an
 * OAuth error code (GitHub sends those with status 200), a 502 for anything else.
 * @throws AuthError 401 for a refusal; AppError OAUTH_PROVIDER_UNAVAILABLE otherwise.
 */
export function readTokenAnswer(label: string, answer: ProviderAnswer): Record<string, unknown> {
  const body = asObject(answer.json);
  if (answer.status >= 500) throw unavailable(label, `token endpoint answered ${answer.status}`);
  const error = oauthErrorCode(body?.error);
  if (error) throw loginFailed(label, error);
  if (!body || answer.status < 200 || answer.status > 299) {
    throw unavailable(label, `unreadable token endpoint answer (${answer.status})`);
  }
  return body;
}
