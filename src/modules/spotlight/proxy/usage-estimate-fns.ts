/**
 * The usage estimate of a call whose upstream answered 2xx without a usage object (a stream closed
 * by the caller or broken before its usage chunk, an answer without usage): about four characters
 * per token, counted in Unicode code points, so that such a call still costs something.
 */

/** Unicode code points of a string (a surrogate pair is one; a lone surrogate counts one too). */
export function codePoints(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}

const record = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

const chars = (v: unknown) => (typeof v === 'string' ? codePoints(v) : 0);

/**
 * Characters of a request's `messages`: every string `content`, and the `text` of every part of an
 * array `content`. Roles, names, tools and every other field count nothing.
 */
export function promptChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) {
    const content = record(m)?.content;
    if (typeof content === 'string') n += codePoints(content);
    else if (Array.isArray(content)) for (const part of content) n += chars(record(part)?.text);
  }
  return n;
}

/**
 * Characters of generated text in a chat completion (`message`) or one stream chunk (`delta`):
 * `content`, `refusal` and every `tool_calls[].function.arguments` of each choice.
 */
export function generatedChars(value: unknown, field: 'message' | 'delta'): number {
  const choices = record(value)?.choices;
  if (!Array.isArray(choices)) return 0;
  let n = 0;
  for (const choice of choices) {
    const m = record(record(choice)?.[field]);
    if (!m) continue;
    n += chars(m.content) + chars(m.refusal);
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) n += chars(record(record(call)?.function)?.arguments);
    }
  }
  return n;
}

/** Estimated tokens of `chars` characters: one per four, rounded up. */
export const estimatedTokens = (chars: number) => Math.ceil(chars / 4);
