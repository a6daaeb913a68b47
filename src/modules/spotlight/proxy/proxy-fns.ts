/** Pure rules of the model proxy: OpenAI's error shape, model names, request shaping, SSE reading. */

export type OpenAiErrorType =
  | 'invalid_request_error'
  | 'upstream_error'
  | 'not_found_error'
  | 'permission_error'
  // OpenAI's types of its own rate-limit refusals.
  | 'requests'
  | 'tokens';

/** OpenAI's error body. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function openAiError(
  message: string,
  type: OpenAiErrorType,
  code: string | null,
  param: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

/** An error the proxy answers itself, in OpenAI's shape. */
export class ProxyError extends Error {
  constructor(
    readonly status: number,
    readonly body: OpenAiErrorBody,
    /** Headers of the refusal (a rate limit's Retry-After and x-ratelimit-*). */
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error.message);
  }
}

export const proxyError = (status: number, message: string, code: string | null, param: string | null = null) =>
  new ProxyError(status, openAiError(message, status >= 500 ? 'upstream_error' : 'invalid_request_error', code, param));

/** `<credential name>/<upstream model>`, split at the first "/"; null when there is no "/". */
export function splitModel(model: string): { credential: string; upstream: string } | null {
  const at = model.indexOf('/');
  if (at <= 0 || at === model.length - 1) return null;
  return { credential: model.slice(0, at), upstream: model.slice(at + 1) };
}

/**
 * The chat-completion body as the proxy accepts it: a JSON object with a non-empty string `model`
 * and a non-empty array `messages`. Everything else passes through unchecked.
 * @throws ProxyError 400 naming the field.
 */
export function checkChatBody(body: unknown): Record<string, unknown> & { model: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw proxyError(400, 'The request body must be a JSON object', 'invalid_body');
  }
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') {
    throw proxyError(400, 'model must be a non-empty string', 'invalid_value', 'model');
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0) {
    throw proxyError(400, 'messages must be a non-empty array', 'invalid_value', 'messages');
  }
  return b as Record<string, unknown> & { model: string };
}

/**
 * The body sent upstream: the caller's, with `model` replaced and, for streams, usage asked for
 * (other stream_options kept). Also says whether the caller itself asked for the usage chunk.
 */
export function upstreamChatBody(body: Record<string, unknown>, upstreamModel: string) {
  const out: Record<string, unknown> = { ...body, model: upstreamModel };
  const stream = body.stream === true;
  const options = body.stream_options;
  const given = typeof options === 'object' && options !== null && !Array.isArray(options) ? options : {};
  const callerWantsUsage = (given as Record<string, unknown>).include_usage === true;
  if (stream) out.stream_options = { ...given, include_usage: true };
  return { body: out, stream, callerWantsUsage };
}

/** An SSE event grew past the splitter's cap without its closing blank line. */
export class SseEventTooLarge extends Error {
  constructor(readonly maxEventBytes: number) {
    super(`Upstream sent an event larger than ${maxEventBytes} bytes without ending it`);
  }
}

const BOUNDARY = /\r?\n\r?\n/g;
/** A boundary is at most 4 characters: the last 3 of the open event may start one. */
const CARRY = 3;

/**
 * Splits an SSE text stream into whole events (text up to a blank line), across chunk boundaries.
 * Each push searches only the new text and the last 3 characters before it (a boundary split
 * between two chunks), and the open event is kept as a list of pieces joined once when it ends:
 * the work is linear in the stream's length whatever the chunk sizes. `scanned` counts the
 * characters searched, so a test can hold it to that.
 * @throws SseEventTooLarge from push when the open event passes `maxEventBytes` (UTF-8 bytes).
 */
export function createSseSplitter(maxEventBytes = Number.POSITIVE_INFINITY) {
  let pieces: string[] = [];
  let openBytes = 0;
  let tail = '';
  let scanned = 0;

  function keep(text: string) {
    if (text === '') return;
    pieces.push(text);
    openBytes += Buffer.byteLength(text);
    if (openBytes > maxEventBytes) throw new SseEventTooLarge(maxEventBytes);
    tail = (tail + text).slice(-CARRY);
  }

  return {
    push(text: string): string[] {
      const events: string[] = [];
      const window = tail + text;
      // Where the text not yet kept in pieces starts, and where the next search starts.
      let start = tail.length;
      let from = 0;
      for (;;) {
        BOUNDARY.lastIndex = from;
        const match = BOUNDARY.exec(window);
        scanned += (match ? match.index + match[0].length : window.length) - from;
        if (!match) break;
        const open = pieces.join('');
        const cut = match.index - start;
        events.push(cut >= 0 ? open + window.slice(start, match.index) : open.slice(0, open.length + cut));
        from = start = match.index + match[0].length;
        pieces = [];
        openBytes = 0;
        tail = '';
      }
      keep(window.slice(start));
      return events;
    },
    /** Whatever remains after the stream ended (an event without its closing blank line). */
    rest: () => pieces.join(''),
    /** Characters searched so far. */
    get scanned() {
      return scanned;
    },
  };
}

/** The `data` of one SSE event (its data lines joined by "\n"), or null when it has none. */
export function sseData(event: string): string | null {
  const lines = event.split(/\r?\n/).filter((l) => l.startsWith('data:'));
  if (lines.length === 0) return null;
  return lines.map((l) => l.slice(5).replace(/^ /, '')).join('\n');
}

/**
 * Token counts of an answer as recorded: `input` includes cached input (read from or written to
 * the provider's prompt cache), as OpenTelemetry's `gen_ai.usage.input_tokens` does; `cacheWrite1h`
 * is the part of `cacheWrite` written to Anthropic's 1-hour cache (0 when not reported).
 */
export interface TokenUsage {
  input: number | null;
  output: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  cacheWrite1h: number;
}

export interface ChunkFacts {
  model: string | null;
  id: string | null;
  /** Tokens of content, refusal or tool calls in this chunk (what "first token" means). */
  hasToken: boolean;
  /** A usage-only chunk: empty choices with usage set. */
  usageOnly: boolean;
  usage: TokenUsage | null;
  finishReasons: string[];
}

export const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** What the accounting needs of one chat-completion object or stream chunk. */
export function chunkFacts(value: unknown): ChunkFacts {
  const o = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const choices = Array.isArray(o.choices) ? (o.choices as Array<Record<string, unknown>>) : [];
  const hasToken = choices.some((c) => {
    const d = (c?.delta ?? {}) as Record<string, unknown>;
    return (
      (typeof d.content === 'string' && d.content !== '') ||
      (typeof d.refusal === 'string' && d.refusal !== '') ||
      (Array.isArray(d.tool_calls) && d.tool_calls.length > 0)
    );
  });
  const u = o.usage as Record<string, unknown> | null | undefined;
  const details = (u && typeof u === 'object' ? u.prompt_tokens_details : null) as Record<string, unknown> | null;
  const usage: TokenUsage | null =
    u && typeof u === 'object'
      ? {
          input: count(u.prompt_tokens),
          output: count(u.completion_tokens),
          cacheRead: details && typeof details === 'object' ? count(details.cached_tokens) : null,
          cacheWrite: null,
          cacheWrite1h: 0,
        }
      : null;
  return {
    model: typeof o.model === 'string' ? o.model : null,
    id: typeof o.id === 'string' ? o.id : null,
    hasToken,
    usageOnly: choices.length === 0 && usage !== null,
    usage,
    finishReasons: choices.map((c) => c?.finish_reason).filter((r): r is string => typeof r === 'string'),
  };
}

/** The upstream's error body relayed as it is when it is JSON with an `error` object, else wrapped. */
export function upstreamErrorBody(status: number, text: string): { body: string; message: string; json: boolean } {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed?.error === 'object' && parsed.error !== null && !Array.isArray(parsed.error)) {
      const m = (parsed.error as { message?: unknown }).message;
      return { body: text, message: typeof m === 'string' ? m : `upstream answered HTTP ${status}`, json: true };
    }
  } catch {
    // not JSON: wrapped below
  }
  const message = `upstream answered HTTP ${status}: ${text.slice(0, 500)}`;
  return { body: JSON.stringify(openAiError(message, 'upstream_error', 'upstream_error')), message, json: false };
}
