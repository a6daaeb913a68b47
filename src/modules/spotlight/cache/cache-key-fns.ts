import { createHash } from 'node:crypto';

/** Longest policy a caller may ask for with `X-Taskhook-Cache: max-age=N` (one day). */
export const MAX_CACHE_TTL_SECONDS = 86_400;

/**
 * What `X-Taskhook-Cache` asked for: `absent` (no header: the route's default applies), `no-store`
 * (no policy, overriding the route's), a policy of N seconds, or `invalid` (answered 400
 * `invalid_cache_header` and not recorded).
 */
export type CacheHeader =
  | { kind: 'absent' }
  | { kind: 'no-store' }
  | { kind: 'max-age'; seconds: number }
  | { kind: 'invalid' };

/** Reads the `X-Taskhook-Cache` request header; whitespace around the value is ignored. */
export function parseCacheHeader(value: string | string[] | undefined): CacheHeader {
  if (value === undefined) return { kind: 'absent' };
  // A repeated header is ambiguous: refuse it rather than guess which one the caller meant.
  if (Array.isArray(value)) return { kind: 'invalid' };
  const text = value.trim();
  if (text === 'no-store') return { kind: 'no-store' };
  const match = /^max-age=([0-9]{1,6})$/.exec(text);
  if (!match) return { kind: 'invalid' };
  const seconds = Number(match[1]);
  return seconds >= 1 && seconds <= MAX_CACHE_TTL_SECONDS ? { kind: 'max-age', seconds } : { kind: 'invalid' };
}

/**
 * The policy of a call in seconds, or null when the call neither reads nor writes the cache: the
 * header wins, else the route's `cache_ttl_seconds`, else none.
 */
export function cachePolicySeconds(header: CacheHeader, routeTtlSeconds: number | null): number | null {
  if (header.kind === 'max-age') return header.seconds;
  if (header.kind === 'no-store' || header.kind === 'invalid') return null;
  return routeTtlSeconds;
}

/** Body fields that never change the answer's identity: the model is part of the target, the rest is bookkeeping. */
const IGNORED_BODY_FIELDS = new Set(['model', 'user', 'stream_options']);

/**
 * Serialises a parsed JSON value canonically: object keys sorted by UTF-16 code units at every level
 * (JavaScript's default string order), arrays in order, no whitespace, numbers and strings by value.
 * Parsing already made `1.0` and `1`, `"\u0041"` and `"A"` the same value; JSON.stringify writes each
 * value in one spelling only.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') return canonicalObject(Object.entries(value));
  // Non-finite numbers cannot come out of JSON.parse; JSON.stringify would write null for them.
  return JSON.stringify(value) ?? 'null';
}

/** An object from its own entries (never assigned into a new object: a `__proto__` key must stay a key). */
function canonicalObject(entries: [string, unknown][]): string {
  const sorted = entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${sorted.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * The canonical request body of a cache key: `ignored` left out (for chat completions `model`,
 * `user` and `stream_options`), `stream` kept.
 */
export function canonicalBody(
  body: Record<string, unknown>,
  ignored: ReadonlySet<string> = IGNORED_BODY_FIELDS,
): string {
  return canonicalObject(Object.entries(body).filter(([key]) => !ignored.has(key)));
}

/**
 * What a key adds for an endpoint kind other than chat completions: the kind (an entry of one kind
 * never answers another) and what else of the request changes the answer (Anthropic's version
 * headers); `ignored` is its body fields left out.
 */
export interface KeyKind {
  api: string;
  ignored: ReadonlySet<string>;
  extra?: readonly unknown[];
}

/** The target part of a key for a plain call: the credential as it is now, and the upstream model. */
export interface PlainTarget {
  kind: 'credential';
  credentialUuid: string;
  credentialUpdatedAt: string;
  upstreamModel: string;
}

/** The target part of a key for a route call: the route and every target credential as they are now. */
export interface RouteTarget {
  kind: 'route';
  routeUuid: string;
  routeUpdatedAt: string;
  credentialUpdatedAts: readonly string[];
}

/**
 * The cache key: a SHA-256 over the exact tuple (workspace; target; canonical body). Editing a
 * credential or a route changes its `updated_at`, so earlier entries become unreachable (and age out).
 */
export function cacheKey(
  workspaceUuid: string,
  target: PlainTarget | RouteTarget,
  body: Record<string, unknown>,
  kind?: KeyKind,
): string {
  const tuple = JSON.stringify(
    kind === undefined
      ? [workspaceUuid, target, canonicalBody(body)]
      : [workspaceUuid, target, canonicalBody(body, kind.ignored), kind.api, kind.extra ?? []],
  );
  return createHash('sha256').update(tuple).digest('hex');
}
