import { checkChatBody, chunkFacts, sseData, upstreamChatBody } from '../proxy-fns.js';
import { generatedChars, promptChars } from '../usage-estimate-fns.js';
import { type EventFacts, freshReader, type Protocol, type StreamReader } from './protocol.js';

/** Whether an SSE event's data is an error object (an upstream's in-band failure). */
function isErrorData(data: string): boolean {
  // Cheap before a parse: a chunk of a completion names no top-level error.
  if (!data.includes('"error"')) return false;
  try {
    const parsed = JSON.parse(data) as { error?: unknown };
    return typeof parsed === 'object' && parsed !== null && parsed.error !== undefined && parsed.error !== null;
  } catch {
    return false;
  }
}

const NOTHING: EventFacts = { usageOnly: false, final: false, error: false, storable: false };

function chatReader(): StreamReader {
  let first = true;
  const reader: StreamReader = {
    ...freshReader(),
    read(event) {
      reader.firstToken = false;
      const data = sseData(event);
      if (data === null) return NOTHING;
      if (data === '[DONE]') {
        reader.complete = true;
        return { ...NOTHING, final: true, storable: true };
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        return NOTHING;
      }
      const facts = chunkFacts(parsed);
      if (first) {
        reader.model = facts.model;
        reader.id = facts.id;
        first = false;
      }
      reader.firstToken = facts.hasToken;
      reader.finishReasons.push(...facts.finishReasons);
      reader.outputChars += generatedChars(parsed, 'delta');
      if (facts.usage) reader.usage = facts.usage;
      return { ...NOTHING, usageOnly: facts.usageOnly, error: isErrorData(data) };
    },
    brokenEvent: (code, message) =>
      `data: ${JSON.stringify({ error: { message, type: 'upstream_error', param: null, code } })}\n\n`,
  };
  return reader;
}

/** OpenAI's chat completions: `POST {base_url}/chat/completions`. */
export const chatProtocol: Protocol = {
  api: 'chat.completions',
  path: '/chat/completions',
  checkBody: checkChatBody,
  upstreamBody: upstreamChatBody,
  promptChars: (body) => promptChars(body.messages),
  maxTokens: (body) => body.max_completion_tokens ?? body.max_tokens,
  wholeFacts(parsed) {
    const facts = chunkFacts(parsed);
    return {
      model: facts.model,
      id: facts.id,
      finishReasons: facts.finishReasons,
      usage: facts.usage,
      outputChars: generatedChars(parsed, 'message'),
      failure: null,
    };
  },
  streamReader: chatReader,
  requiresTerminal: false,
  cacheable: () => true,
  ignoredInKey: new Set(['model', 'user', 'stream_options']),
  storableWhole: (parsed) => Array.isArray((parsed as { choices?: unknown } | null)?.choices),
};
