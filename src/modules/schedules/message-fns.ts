import { invalid } from '../../http/errors.js';

/** The placeholders a schedule's message may use, and the value each renders. */
export interface MessageValues {
  uuid: string;
  name: string;
  scheduled_for: string;
  local_time: string;
  local_date: string;
}

const NAMES = new Set(['uuid', 'name', 'scheduled_for', 'local_time', 'local_date']);
const PLACEHOLDER = /\{\{([^}]*)\}\}/g;

/**
 * Checks a message's placeholders: only `{{schedule.…}}` of the five names, spaces allowed inside
 * the braces, every `{{` closed.
 * @throws AppError 400 INVALID_REQUEST with `details.field` = "message".
 */
export function checkMessage(message: string) {
  let rest = message;
  for (const match of message.matchAll(PLACEHOLDER)) {
    const inner = match[1] ?? '';
    const path = inner.trim();
    if (!path.startsWith('schedule.') || !NAMES.has(path.slice('schedule.'.length))) {
      throw invalid('message', `unknown placeholder {{${inner}}}`);
    }
    rest = rest.replace(match[0], '');
  }
  if (rest.includes('{{')) throw invalid('message', 'has an unclosed {{');
}

/** The message with its placeholders replaced, cut to `maxChars`. */
export function renderMessage(message: string, values: MessageValues, maxChars: number): string {
  if (!message.includes('{{')) return message;
  const text = message.replace(PLACEHOLDER, (_whole, inner: string) => {
    const name = inner.trim().slice('schedule.'.length) as keyof MessageValues;
    return values[name] ?? '';
  });
  return text.slice(0, maxChars);
}
