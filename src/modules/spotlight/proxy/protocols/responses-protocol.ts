import { count, proxyError, sseData, type TokenUsage } from '../proxy-fns.js';
import { codePoints } from '../usage-estimate-fns.js';
import { type EventFacts, freshReader, type Protocol, record, type StreamReader } from './protocol.js';

/** Events that end a Responses stream, each carrying the whole response with its usage. */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
/** Events whose non-empty `delta` is generated output (the first token). */
const TOKEN_EVENTS = new Set([
  'response.output_text.delta',
  'response.refusal.delta',
  'response.function_call_arguments.delta',
]);
const NOTHING: EventFacts = { usageOnly: false, final: false, error: false, storable: false };

const text = (v: unknown) => (typeof v === 'string' ? codePoints(v) : 0);

/** A Responses `usage` object as recorded; null when there is none. */
export function responsesUsage(value: unknown): TokenUsage | null {
  const u = record(value);
  if (!u) return null;
  return {
    input: count(u.input_tokens),
    output: count(u.output_tokens),
    cacheRead: count(record(u.input_tokens_details)?.cached_tokens),
    cacheWrite: null,
    cacheWrite1h: 0,
  };
}

/** Characters of a request's `input` (a string, or items whose content is a string or parts with `text`) and `instructions`. */
function inputChars(body: Record<string, unknown>): number {
  let n = text(body.instructions);
  if (typeof body.input === 'string') return n + codePoints(body.input);
  if (!Array.isArray(body.input)) return n;
  for (const item of body.input) {
    const content = record(item)?.content;
    if (typeof content === 'string') n += codePoints(content);
    else if (Array.isArray(content)) for (const part of content) n += text(record(part)?.text);
  }
  return n;
}

/** Characters of generated output in a response object: text, refusals and function-call arguments. */
function outputChars(response: Record<string, unknown> | null): number {
  const output = response?.output;
  if (!Array.isArray(output)) return 0;
  let n = 0;
  for (const item of output) {
    const it = record(item);
    n += text(it?.arguments);
    if (Array.isArray(it?.content))
      for (const part of it.content) n += text(record(part)?.text) + text(record(part)?.refusal);
  }
  return n;
}

const failureOf = (response: Record<string, unknown> | null) =>
  response?.status === 'failed' ? String(record(response.error)?.message ?? 'the upstream response failed') : null;

function responsesReader(): StreamReader {
  let sequence: number | null = null;
  const reader: StreamReader = {
    ...freshReader(),
    read(event) {
      reader.firstToken = false;
      const data = sseData(event);
      let parsed: Record<string, unknown> | null = null;
      try {
        parsed = data === null ? null : record(JSON.parse(data));
      } catch {
        return NOTHING;
      }
      if (!parsed) return NOTHING;
      if (typeof parsed.sequence_number === 'number') sequence = parsed.sequence_number;
      const type = parsed.type;
      const response = record(parsed.response);
      if (type === 'response.created' && response) {
        reader.model = typeof response.model === 'string' ? response.model : null;
        reader.id = typeof response.id === 'string' ? response.id : null;
      }
      if (typeof type === 'string' && TOKEN_EVENTS.has(type) && typeof parsed.delta === 'string') {
        reader.outputChars += codePoints(parsed.delta);
        reader.firstToken = parsed.delta !== '';
      }
      if (type === 'error') {
        reader.complete = true;
        reader.failure = typeof parsed.message === 'string' ? parsed.message : 'the upstream stream failed';
        return { ...NOTHING, final: true, error: true };
      }
      if (typeof type !== 'string' || !TERMINAL.has(type)) return NOTHING;
      reader.complete = true;
      reader.model ??= typeof response?.model === 'string' ? response.model : null;
      reader.id ??= typeof response?.id === 'string' ? response.id : null;
      if (typeof response?.status === 'string') reader.finishReasons.push(response.status);
      reader.usage = responsesUsage(response?.usage) ?? reader.usage;
      reader.failure = type === 'response.failed' ? (failureOf(response) ?? 'the upstream response failed') : null;
      return { ...NOTHING, final: true, error: type === 'response.failed', storable: type === 'response.completed' };
    },
    brokenEvent: (code, message) =>
      `event: error\ndata: ${JSON.stringify({
        type: 'error',
        code,
        message,
        param: null,
        sequence_number: sequence === null ? 0 : sequence + 1,
      })}\n\n`,
  };
  return reader;
}

/** OpenAI's Responses API: `POST {base_url}/responses`. */
export const responsesProtocol: Protocol = {
  api: 'responses',
  path: '/responses',
  checkBody(body) {
    const b = record(body);
    if (!b) throw proxyError(400, 'The request body must be a JSON object', 'invalid_body');
    if (typeof b.model !== 'string' || b.model === '')
      throw proxyError(400, 'model must be a non-empty string', 'invalid_value', 'model');
    if (b.input !== undefined && typeof b.input !== 'string' && !Array.isArray(b.input))
      throw proxyError(400, 'input must be a string or an array', 'invalid_value', 'input');
    // A background response is answered before it has usage: it would escape records and budgets.
    if (b.background === true)
      throw proxyError(
        400,
        'background responses are not supported by the proxy',
        'unsupported_parameter',
        'background',
      );
    return b as Record<string, unknown> & { model: string };
  },
  upstreamBody: (body, upstreamModel) => ({
    body: { ...body, model: upstreamModel },
    stream: body.stream === true,
    callerWantsUsage: true,
  }),
  promptChars: inputChars,
  maxTokens: (body) => body.max_output_tokens,
  wholeFacts(parsed) {
    const response = record(parsed);
    return {
      model: typeof response?.model === 'string' ? response.model : null,
      id: typeof response?.id === 'string' ? response.id : null,
      finishReasons: typeof response?.status === 'string' ? [response.status] : [],
      usage: responsesUsage(response?.usage),
      outputChars: outputChars(response),
      failure: failureOf(response),
    };
  },
  streamReader: responsesReader,
  requiresTerminal: true,
  // Its meaning depends on state kept upstream (and a conversation call changes that state).
  cacheable: (body) => body.previous_response_id === undefined && body.conversation === undefined,
  ignoredInKey: new Set(['model', 'stream_options']),
  storableWhole: (parsed) => record(parsed)?.status === 'completed',
};
