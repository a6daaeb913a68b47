/** JSON bodies may nest objects and arrays at most this deep. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests objects and arrays deeper than `max`. One linear pass over the text
 * with no recursion, run BEFORE parsing, so a hostile body (hundreds of thousands of `[`) never
 * reaches a recursive parser, validator or template renderer. Brackets inside strings do not count;
 * the text need not be valid JSON (the parser refuses that afterwards).
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** `\u0000` as JSON text writes it, not itself escaped (an even run of backslashes before it). */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

/**
 * Whether JSON text holds a NUL character (U+0000) in a string or key. PostgreSQL cannot store
 * one in text or jsonb, so bodies with one are refused on both databases alike. (A raw NUL byte
 * is not valid JSON; the parser refuses that itself.)
 */
export function jsonHasNul(text: string): boolean {
  return text.includes('\\u0000') && NUL_ESCAPE.test(text);
}
