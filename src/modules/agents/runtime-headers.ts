import { invalid } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { HEADER_MASK, type Runtime } from './runtime-schemas.js';

type Headers = Record<string, string>;

/**
 * What an HTTP header value may hold (RFC 9110 field-value: tab, visible ASCII, space and the bytes
 * 0x80-0xFF). Refused here, at create and update, rather than by the HTTP client when the task runs.
 */
const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** A runtime's headers: the variants that call the agent over HTTP have them (their schema says so). */
function headersOf(runtime: Runtime | null | undefined): Headers | undefined {
  return runtime?.headers;
}

function withHeaders(runtime: Runtime, headers: Headers): Runtime {
  return { ...runtime, headers };
}

/**
 * The runtime as stored: header values sealed. A value that is exactly the mask keeps the value
 * stored under that name (names compare case-insensitively, as HTTP does), so a read-modify-write
 * never stores the mask.
 * @throws AppError INVALID_REQUEST (`runtime.headers`) for names that differ only in case, or a
 * mask with no stored value behind it; (`runtime.headers.<Name>`) for a value no HTTP header may
 * carry (CR, LF, other control characters).
 */
export function sealRuntimeHeaders(runtime: Runtime, previous: Runtime | null, box: SecretBox): Runtime {
  const headers = headersOf(runtime);
  if (!headers) return runtime;
  const stored = new Map(Object.entries(headersOf(previous) ?? {}).map(([name, v]) => [name.toLowerCase(), v]));
  const seen = new Set<string>();
  const sealed: Headers = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (seen.has(key)) throw invalid('runtime.headers', `names header ${name} twice (names are case-insensitive)`);
    seen.add(key);
    if (value === HEADER_MASK) {
      const kept = stored.get(key);
      if (kept === undefined) throw invalid('runtime.headers', `has no stored value of ${name} to keep`);
      sealed[name] = kept;
    } else {
      if (INVALID_HEADER_VALUE.test(value)) {
        throw invalid(`runtime.headers.${name}`, 'must not contain line breaks or other control characters');
      }
      sealed[name] = box.seal(value);
    }
  }
  return withHeaders(runtime, sealed);
}

/** The runtime as every response shows it: each header value is the mask. */
export function maskRuntimeHeaders(runtime: Runtime): Runtime {
  const headers = headersOf(runtime);
  if (!headers) return runtime;
  return withHeaders(runtime, Object.fromEntries(Object.keys(headers).map((name) => [name, HEADER_MASK])));
}

/** The runtime as a push runtime uses it: header values in clear. */
export function openRuntimeHeaders(runtime: Runtime, box: SecretBox): Runtime {
  const headers = headersOf(runtime);
  if (!headers) return runtime;
  return withHeaders(runtime, Object.fromEntries(Object.entries(headers).map(([n, v]) => [n, box.open(v)])));
}
