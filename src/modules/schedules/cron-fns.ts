/**
 * The cron grammar of schedules (docs/schedules.md): five or six fields, numbers, names, lists,
 * ranges and steps, and the classic macros. Everything else is refused here, before croner sees
 * the pattern: croner accepts more (`L`, `W`, `#`, `?`, years), which schedules must not.
 */

/** A parsed pattern: croner's six-field form (seconds first) with every field spelled out. */
export interface CronSpec {
  /** `s m h dom mon dow` as explicit lists, `*` kept only where the pattern had a lone `*`. */
  pattern: string;
}

export type CronParse = { ok: true; spec: CronSpec } | { ok: false; reason: string };

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldKind {
  name: string;
  min: number;
  max: number;
  /** Names for the values from `min` on. */
  names?: string[];
}

const FIELDS: FieldKind[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day-of-week', min: 0, max: 7, names: DAYS },
];

class CronSyntaxError extends Error {}

function value(text: string, kind: FieldKind): number {
  const upper = text.toUpperCase();
  const named = kind.names?.indexOf(upper) ?? -1;
  if (named >= 0) return kind.min + named;
  if (!/^\d{1,2}$/.test(text)) throw new CronSyntaxError(`${kind.name}: "${text}" is not a number or name`);
  const n = Number(text);
  if (n < kind.min || n > kind.max) {
    throw new CronSyntaxError(`${kind.name}: ${n} is outside ${kind.min}-${kind.max}`);
  }
  return n;
}

function step(text: string, kind: FieldKind): number {
  if (!/^\d{1,3}$/.test(text)) throw new CronSyntaxError(`${kind.name}: step "${text}" is not a number`);
  const s = Number(text);
  if (s < 1) throw new CronSyntaxError(`${kind.name}: step must be at least 1`);
  return s;
}

/** The values one field's text allows, or throws CronSyntaxError. */
function fieldValues(text: string, kind: FieldKind): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') throw new CronSyntaxError(`${kind.name}: empty list item`);
    const [range = '', stepText, extra] = item.split('/');
    if (extra !== undefined) throw new CronSyntaxError(`${kind.name}: "${item}" has two steps`);
    const by = stepText === undefined ? 1 : step(stepText, kind);
    let from: number;
    let to: number;
    if (range === '*') {
      from = kind.min;
      to = kind.max;
    } else if (range.includes('-')) {
      const [a = '', b = '', more] = range.split('-');
      if (more !== undefined) throw new CronSyntaxError(`${kind.name}: "${item}" is not a range`);
      from = value(a, kind);
      to = value(b, kind);
      if (from > to) throw new CronSyntaxError(`${kind.name}: range ${a}-${b} runs backwards`);
    } else {
      from = value(range, kind);
      // `a/s` runs from a to the field's maximum; a lone `a` is just a.
      to = stepText === undefined ? from : kind.max;
    }
    for (let n = from; n <= to; n += by) out.add(n);
  }
  return out;
}

function list(values: Set<number>): string {
  return [...values].sort((a, b) => a - b).join(',');
}

/** Parses a pattern per the grammar; `reason` says what is wrong. Does not look at occurrences. */
export function parseCron(cron: string): CronParse {
  const trimmed = cron.trim();
  let body = trimmed;
  if (trimmed.startsWith('@')) {
    const macro = MACROS[trimmed.toLowerCase()];
    if (!macro) return { ok: false, reason: `unknown macro "${trimmed}"` };
    body = macro;
  }
  const parts = body.split(/[ \t]+/);
  if (parts.length !== 5 && parts.length !== 6) {
    return { ok: false, reason: `has ${parts.length} fields; 5 or 6 are allowed` };
  }
  const fields = parts.length === 5 ? ['0', ...parts] : parts;
  try {
    const sets = fields.map((text, i) => fieldValues(text, FIELDS[i] as FieldKind));
    // Sunday is 0 and 7; croner wants 0-6.
    const dow = sets[5] as Set<number>;
    if (dow.delete(7)) dow.add(0);
    // A lone `*` stays `*`: it is what decides between "either day field" and "both" (POSIX).
    const out = sets.map((set, i) => (fields[i] === '*' ? '*' : list(set)));
    return { ok: true, spec: { pattern: out.join(' ') } };
  } catch (err) {
    if (err instanceof CronSyntaxError) return { ok: false, reason: err.message };
    throw err;
  }
}
