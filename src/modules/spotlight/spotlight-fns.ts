/** Pure rules of the model proxy: OpenAI's error shape, model names, request shaping, SSE reading. */

export type OpenAiErrorType = 'invalid_request_error' | 'upstream_error' | 'not_found_error';

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

/** Splits an SSE byte stream into whole events (text up to a blank line), across chunk boundaries. */
export function createSseSplitter() {
  let buffer = '';
  return {
    push(text: string): string[] {
      buffer += text;
      const events: string[] = [];
      for (;;) {
        const match = /\r?\n\r?\n/.exec(buffer);
        if (!match) break;
        events.push(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
      return events;
    },
    /** Whatever remains after the stream ended (an event without its closing blank line). */
    rest: () => buffer,
  };
}

/** The `data` of one SSE event (its data lines joined by "\n"), or null when it has none. */
export function sseData(event: string): string | null {
  const lines = event.split(/\r?\n/).filter((l) => l.startsWith('data:'));
  if (lines.length === 0) return null;
  return lines.map((l) => l.slice(5).replace(/^ /, '')).join('\n');
}

export interface ChunkFacts {
  model: string | null;
  id: string | null;
  /** Tokens of content, refusal or tool calls in this chunk (what "first token" means). */
  hasToken: boolean;
  /** A usage-only chunk: empty choices with usage set. */
  usageOnly: boolean;
  usage: { input: number | null; output: number | null } | null;
  finishReasons: string[];
}

const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

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
  const usage =
    u && typeof u === 'object' ? { input: count(u.prompt_tokens), output: count(u.completion_tokens) } : null;
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
