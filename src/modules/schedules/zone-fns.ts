/**
 * Wall-clock times in IANA time zones, from the runtime's own tz data (`Intl`), and the two DST
 * rules of schedules: a time in a gap is the transition instant, a repeated time is its first
 * instant (docs/schedules.md).
 */

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

// A tz database name: letters first, then words of letters, digits, `_`, `+`, `-` separated by `/`.
// Fixed offsets (`+02:00`) and anything else Intl might also take are not names.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** Whether `zone` names a zone of the tz database this runtime knows. */
export function isZoneName(zone: string): boolean {
  if (!ZONE_NAME.test(zone) || zone.length > 64) return false;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `instant`, in ms (the wall clock minus UTC), to the second. */
export function offsetAt(zone: string, instant: number): number {
  const whole = Math.floor(instant / 1000) * 1000;
  const p = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0 };
  for (const part of formatter(zone).formatToParts(whole)) {
    if (part.type in p) p[part.type as keyof typeof p] = Number(part.value);
  }
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return wall - whole;
}

/** The wall-clock time at `instant`, as ms of a UTC date showing the same fields ("naive"). */
export const wallClockAt = (zone: string, instant: number) => instant + offsetAt(zone, instant);

/**
 * The instant at which the zone's clock shows the naive wall-clock time `wall`: its first such
 * instant when the time is repeated, the transition instant when the time falls in a gap.
 */
export function instantOf(zone: string, wall: number): number {
  const before = offsetAt(zone, wall - DAY_MS);
  const after = offsetAt(zone, wall + DAY_MS);
  const valid = [before, after].map((o) => wall - o).filter((i) => offsetAt(zone, i) === wall - i);
  if (valid.length > 0) return Math.min(...valid);
  // In a gap: the clock jumps over `wall` at the transition, somewhere between these two.
  let lo = wall - Math.max(before, after);
  let hi = wall - Math.min(before, after);
  const offsetLo = offsetAt(zone, lo);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(zone, mid) === offsetLo) lo = mid;
    else hi = mid;
  }
  return hi;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `YYYY-MM-DDTHH:MM:SS±HH:MM`: the wall clock at `instant` with the offset in effect then. */
export function localTime(zone: string, instant: number): string {
  const offset = offsetAt(zone, instant);
  const wall = new Date(Math.floor(instant / 1000) * 1000 + offset).toISOString().slice(0, 19);
  const minutes = Math.abs(offset) / 60_000;
  return `${wall}${offset < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}
