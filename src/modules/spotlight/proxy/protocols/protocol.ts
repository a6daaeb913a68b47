import type { ApiKind } from '../../usage/calls-rows.js';
import type { TokenUsage } from '../proxy-fns.js';

/** What one relayed SSE event told the reader. */
export interface EventFacts {
  /** The usage-only chunk the proxy asked for (chat completions): relayed only to a caller that asked too. */
  usageOnly: boolean;
  /** The protocol's last event: held back until the record is written, then sent. */
  final: boolean;
  /** An error inside the stream (the answer is not stored in the cache). */
  error: boolean;
  /** The event that makes a stream complete and worth storing (chat `[DONE]`, `response.completed`). */
  storable: boolean;
}

/** What a whole (non-streamed) 2xx answer says for the record. */
export interface WholeFacts {
  model: string | null;
  id: string | null;
  finishReasons: string[];
  usage: TokenUsage | null;
  /** Characters of generated text (for the usage estimate when no usage came). */
  outputChars: number;
  /** A 200 answer that still failed (a Responses `status: "failed"`): its message. */
  failure: string | null;
}

/** Reads a stream's events as they pass, for the record. One reader per stream. */
export interface StreamReader {
  read(event: string): EventFacts;
  model: string | null;
  id: string | null;
  finishReasons: string[];
  /** The last usage seen, or null. */
  usage: TokenUsage | null;
  /** Whether the first token came with the last event read. */
  firstToken: boolean;
  outputChars: number;
  /** A terminal or error event arrived (the upstream closed properly). */
  complete: boolean;
  /** An error the stream itself reported (Responses `error` or `response.failed`), or null. */
  failure: string | null;
  /** The last event of a stream that broke after it started. */
  brokenEvent(code: 'upstream_timeout' | 'upstream_error', message: string): string;
}

/**
 * One endpoint kind of the proxy (a protocol it speaks on both sides): how its request is checked
 * and shaped, where it goes upstream, how its answers and streams are read for the record, and
 * which answers the response cache may keep. The proxy service is the same for every kind.
 */
export interface Protocol {
  api: ApiKind;
  /** Appended to the credential's base_url. */
  path: string;
  /**
   * The request as the proxy accepts it (a JSON object with a non-empty string `model`, and what
   * the protocol requires besides).
   * @throws ProxyError 400 naming the field.
   */
  checkBody(body: unknown): Record<string, unknown> & { model: string };
  /** The body sent upstream for `upstreamModel`, whether it streams, and whether the caller asked for the usage chunk. */
  upstreamBody(
    body: Record<string, unknown>,
    upstreamModel: string,
  ): { body: Record<string, unknown>; stream: boolean; callerWantsUsage: boolean };
  /** Characters of the request's prompt (the usage estimate). */
  promptChars(body: Record<string, unknown>): number;
  /** The span's `gen_ai.request.max_tokens`. */
  maxTokens(body: Record<string, unknown>): unknown;
  wholeFacts(parsed: unknown): WholeFacts;
  streamReader(): StreamReader;
  /** Whether a stream that ends without its terminal event broke (Responses, Anthropic) or not (chat). */
  requiresTerminal: boolean;
  /** Whether a request may use the cache at all (a Responses call on upstream state may not). */
  cacheable(body: Record<string, unknown>): boolean;
  /** Body fields left out of the cache key. */
  ignoredInKey: ReadonlySet<string>;
  /** Whether a 200 JSON answer may be stored. */
  storableWhole(parsed: unknown): boolean;
}

export const record = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** A stream reader's state before its first event. */
export const freshReader = (): Omit<StreamReader, 'read' | 'brokenEvent'> => ({
  model: null,
  id: null,
  finishReasons: [],
  usage: null,
  firstToken: false,
  outputChars: 0,
  complete: false,
  failure: null,
});
