import { createHash } from 'node:crypto';
import { AgentCard } from '@a2a-js/sdk';
import { JsonRpcTransportFactory, RestTransportFactory, type Transport } from '@a2a-js/sdk/client';
import { type Dispatcher, fetch as undiciFetch } from 'undici';
import { checkOutboundUrl, type OutboundPolicy } from '../../../lib/outbound.js';
import { retryAfterMs } from '../../../lib/retry-after.js';
import type { Clock } from '../../../lib/time.js';
import { type A2aEndpoint, CardError, endpointOfCard } from './a2a-client-fns.js';

const MAX_CARD_BYTES = 1024 * 1024;
/** Most bytes one answer of the agent may carry (a JSON-RPC or HTTP+JSON answer, or one stream). */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Statuses whose answers never have a body (a Response cannot be built with one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The answer with its body cut off at `limit` bytes: reading past it fails, so a hostile or broken
 * agent cannot make the client buffer without bound (the SDK reads answers whole). A stream that
 * fails this way is followed by polling instead, as after any broken stream.
 */
function capped(res: Response, limit: number): Response {
  if (!res.body || NULL_BODY.has(res.status)) return res;
  let seen = 0;
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > limit) controller.error(new Error(`the agent's answer is larger than ${limit} bytes`));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
const CARD_CACHE_ENTRIES = 500;

/**
 * The HTTP side of one run (or one cancel): every request goes through the outbound guard (the
 * URL is checked, then the connection's address by the guarded dispatcher), follows no redirect
 * (a 3xx is an error answer), carries the agent's headers, `A2A-Version: 1.0` and the run's
 * traceparent, and ends with `signal`. It remembers the Retry-After of the last refused answer.
 */
export interface A2aSession {
  fetch: typeof fetch;
  /** The headers every request carries (the SDK's service parameters). */
  headers: Record<string, string>;
  signal: AbortSignal;
  /** Retry-After (ms) of the last non-2xx answer, if it had one. */
  retryAfterMs: number | null;
}

/** The request headers of an agent: its configured headers, the trace context and the protocol version. */
export function headersOf(
  configured: Record<string, string> | undefined,
  traceparent: string | null,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured ?? {})) {
    const lower = name.toLowerCase();
    if (lower !== 'traceparent' || traceparent === null) out[lower] = value;
  }
  if (traceparent !== null) out.traceparent = traceparent;
  out['a2a-version'] = '1.0';
  return out;
}

export function openSession(
  deps: { outbound: OutboundPolicy; dispatcher: Dispatcher; clock: Clock; maxAnswerBytes?: number },
  headers: Record<string, string>,
  signal: AbortSignal,
): A2aSession {
  const session: A2aSession = {
    headers,
    signal,
    retryAfterMs: null,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      await checkOutboundUrl(url, deps.outbound);
      const res = await undiciFetch(url, {
        ...(init as object),
        signal: init?.signal ?? signal,
        dispatcher: deps.dispatcher,
        redirect: 'manual',
      } as Parameters<typeof undiciFetch>[1]);
      if (!res.ok) {
        session.retryAfterMs = retryAfterMs(res.headers.get('retry-after'), deps.clock.now());
      }
      return capped(res as unknown as Response, deps.maxAnswerBytes ?? MAX_ANSWER_BYTES);
    }) as typeof fetch,
  };
  return session;
}

/** The SDK transport (v1.0 wire format) of an endpoint, over the session's guarded fetch. */
export function transportOf(
  session: A2aSession,
  endpoint: Pick<A2aEndpoint, 'url' | 'binding'>,
  card?: AgentCard,
): Promise<Transport> {
  const factory =
    endpoint.binding === 'JSONRPC'
      ? new JsonRpcTransportFactory({ fetchImpl: session.fetch })
      : new RestTransportFactory({ fetchImpl: session.fetch });
  return factory.create(endpoint.url, card ?? AgentCard.fromJSON({}));
}

async function readLimited(res: Response, limit: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new CardError(`the agent card is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface CachedCard {
  endpoint: A2aEndpoint;
  card: AgentCard;
  expiresAt: number;
}

/**
 * Agent cards by URL and headers, kept `ttlMs` (the card of an agent whose credential changed is
 * fetched again). Only usable cards are kept.
 */
export function createCardCache(deps: { clock: Clock; ttlMs: number }) {
  const cards = new Map<string, CachedCard>();
  const keyOf = (url: string, headers: Record<string, string>) =>
    createHash('sha256')
      .update(JSON.stringify([url, Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : 1))]))
      .digest('hex');

  return {
    /**
     * The endpoint this client uses and the card, fetched with the session's headers unless cached.
     * @throws CardError when the card cannot be fetched or has no usable interface; other errors
     * (connection, guard, abort) as thrown by the session's fetch.
     */
    async get(url: string, session: A2aSession): Promise<{ endpoint: A2aEndpoint; card: AgentCard }> {
      const { traceparent: _, ...stable } = session.headers;
      const key = keyOf(url, stable);
      const hit = cards.get(key);
      if (hit && hit.expiresAt > deps.clock.now()) return hit;
      cards.delete(key);
      const res = await session.fetch(url, {
        method: 'GET',
        headers: { ...session.headers, accept: 'application/json' },
        signal: session.signal,
      });
      if (!res.ok) {
        await res.body?.cancel();
        throw new CardError(`the agent card answered HTTP ${res.status}`);
      }
      let json: unknown;
      try {
        json = JSON.parse(await readLimited(res, MAX_CARD_BYTES));
      } catch (err) {
        if (err instanceof CardError) throw err;
        throw new CardError('the agent card is not valid JSON');
      }
      const endpoint = endpointOfCard(json);
      const entry = { endpoint, card: AgentCard.fromJSON(json), expiresAt: deps.clock.now() + deps.ttlMs };
      if (cards.size >= CARD_CACHE_ENTRIES) cards.delete(cards.keys().next().value as string);
      cards.set(key, entry);
      return entry;
    },
  };
}

export type CardCache = ReturnType<typeof createCardCache>;
