import { invalid } from './errors.js';

/**
 * Characters a name may not hold: the C0 and C1 controls (tab, line feed and carriage return
 * included), DEL, the line and paragraph separators, and the bidirectional controls. Names are
 * shown to other members, rendered by dashboards and MCP clients, and written into log lines and
 * e-mails: a newline forges a line, a direction override reorders what a person reads. Every other
 * character (letters of any script, emoji, U+00A0) is allowed.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const FORBIDDEN_IN_NAMES = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/** What the OpenAPI document says of every name field this rule covers. */
export const NAME_RULE =
  'No control characters: U+0000–U+001F (tab and line breaks included), U+007F–U+009F, U+2028, U+2029 and the ' +
  'bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069 are refused (400 INVALID_REQUEST, ' +
  'details.field "name").';

/** The first forbidden character of a name as `U+XXXX`, or null when it has none. */
export function forbiddenCharacterIn(name: string): string | null {
  const found = FORBIDDEN_IN_NAMES.exec(name);
  if (!found) return null;
  return `U+${(found[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * A name given on a create or a rename (workspace, agent, trigger, schedule, platform key).
 * @throws AppError INVALID_REQUEST (`details.field` "name") naming the first control character.
 */
export function requirePlainName(name: string): string {
  const found = forbiddenCharacterIn(name);
  if (found) throw invalid('name', `must not contain control characters (found ${found})`);
  return name;
}
