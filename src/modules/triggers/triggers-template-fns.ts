/**
 * Message templates of webhook triggers: text with `{{payload.a.b.c}}` placeholders filled from
 * the delivered JSON (rules in docs/api.md §7.2). Parsed once when a trigger is created or changed; rendered
 * for each delivery without ever throwing or evaluating anything.
 */
import { AppError } from '../../http/errors.js';

export type TemplatePart = { text: string } | { path: string[]; written: string };

export interface TemplateError {
  /** 0-based character offset of the problem in the template. */
  position: number;
  reason: string;
}

export type ParseResult = { ok: true; parts: TemplatePart[] } | { ok: false; error: TemplateError };

const OPEN = '{{';
const CLOSE = '}}';

/**
 * Splits a template into text and placeholders. A placeholder is `{{payload}}` or
 * `{{payload.<seg>.<seg>…}}` with optional spaces inside the braces; a segment is any characters
 * but `.`, `{` and `}`, and must not be empty.
 */
export function parseTemplate(template: string): ParseResult {
  const parts: TemplatePart[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf(OPEN, i);
    const stray = template.indexOf(CLOSE, i);
    if (stray !== -1 && (open === -1 || stray < open)) {
      // A lone `}}` outside a placeholder is plain text.
      parts.push({ text: template.slice(i, stray + CLOSE.length) });
      i = stray + CLOSE.length;
      continue;
    }
    if (open === -1) {
      parts.push({ text: template.slice(i) });
      break;
    }
    if (open > i) parts.push({ text: template.slice(i, open) });
    const close = template.indexOf(CLOSE, open + OPEN.length);
    if (close === -1) return { ok: false, error: { position: open, reason: 'unclosed {{' } };
    const inner = template.slice(open + OPEN.length, close);
    const parsed = parsePlaceholder(inner.trim(), open);
    if ('error' in parsed) return { ok: false, error: parsed.error };
    parts.push({ path: parsed.path, written: inner.trim() });
    i = close + CLOSE.length;
  }
  return { ok: true, parts: mergeText(parts) };
}

function parsePlaceholder(inner: string, position: number): { path: string[] } | { error: TemplateError } {
  if (inner === 'payload') return { path: [] };
  if (!inner.startsWith('payload.')) {
    return { error: { position, reason: `placeholder must be {{payload}} or {{payload.<path>}}, got {{${inner}}}` } };
  }
  const segments = inner.slice('payload.'.length).split('.');
  for (const segment of segments) {
    if (segment === '') return { error: { position, reason: `empty path segment in {{${inner}}}` } };
    if (segment.includes('{') || segment.includes('}')) {
      return { error: { position, reason: `path segment may not contain braces in {{${inner}}}` } };
    }
  }
  return { path: segments };
}

function mergeText(parts: TemplatePart[]): TemplatePart[] {
  const out: TemplatePart[] = [];
  for (const part of parts) {
    const last = out[out.length - 1];
    if ('text' in part && last && 'text' in last) last.text += part.text;
    else out.push(part);
  }
  return out;
}

/** The value at `path` in `payload`: object keys by name, array items by numeric segment. */
export function lookup(payload: unknown, path: string[]): unknown {
  let value: unknown = payload;
  for (const segment of path) {
    if (Array.isArray(value)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      value = value[Number(segment)];
    } else if (value !== null && typeof value === 'object') {
      if (!Object.hasOwn(value, segment)) return undefined;
      value = (value as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return value;
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  return JSON.stringify(value) ?? '';
}

export interface Rendered {
  text: string;
  /** Placeholder paths (as `payload.a.b`, without spaces) that were missing or null, each once, in order. */
  missing: string[];
  /** True when the text was cut at `maxLength`. */
  truncated: boolean;
}

/**
 * Fills the placeholders: strings as they are, numbers and booleans as JSON text, objects and
 * arrays as compact JSON; a missing path or null gives an empty string and is listed in `missing`
 * (also when it comes after the cut). The result is cut at `maxLength` characters, never inside a
 * surrogate pair.
 */
export function renderTemplate(
  parts: TemplatePart[],
  payload: unknown,
  maxLength = Number.POSITIVE_INFINITY,
): Rendered {
  let text = '';
  let truncated = false;
  const missing: string[] = [];
  for (const part of parts) {
    const value = 'text' in part ? part.text : lookup(payload, part.path);
    if ('path' in part && (value === undefined || value === null)) {
      const name = part.path.length ? `payload.${part.path.join('.')}` : 'payload';
      if (!missing.includes(name)) missing.push(name);
    } else if (!truncated) {
      text += asText(value);
      if (text.length > maxLength) {
        text = cutAt(text, maxLength);
        truncated = true;
      }
    }
  }
  return { text, missing, truncated };
}

/** The first `length` UTF-16 units of `text`, one less when the last would be half a surrogate pair. */
function cutAt(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/**
 * The parts of a valid template.
 * @param field the request field it came from (`message_template`, `concurrency_key`).
 * @throws AppError INVALID_REQUEST naming `field`, with the problem and where it is.
 */
export function checkTemplate(template: string, field = 'message_template'): TemplatePart[] {
  const parsed = parseTemplate(template);
  if (!parsed.ok) {
    const reason = `${parsed.error.reason} (at character ${parsed.error.position})`;
    throw new AppError('INVALID_REQUEST', `Invalid ${field}: ${reason}`, { field, reason });
  }
  return parsed.parts;
}

/** Longest concurrency key a task may have; a rendered key template is cut to it. */
export const MAX_CONCURRENCY_KEY_CHARS = 255;

/**
 * A task's concurrency key from a trigger's key template (a valid one) and a delivery's payload:
 * rendered as a message is, cut to 255 characters; an empty result (or no template) is no key.
 * Missing paths are not reported: only the message's go to `template_missing`.
 */
export function renderConcurrencyKey(template: string | null, payload: unknown): string | null {
  if (template === null) return null;
  const { text } = renderTemplate(checkTemplate(template, 'concurrency_key'), payload, MAX_CONCURRENCY_KEY_CHARS);
  return text === '' ? null : text;
}
