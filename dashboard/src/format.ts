/** Short, readable times: "3 min ago", with the exact ISO time available as a tooltip. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const delta = Math.round((now - Date.parse(iso)) / 1000);
  if (delta < -5) return `in ${span(-delta)}`;
  if (delta < 5) return 'just now';
  return `${span(delta)} ago`;
}

function span(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.round(hours / 24)} days`;
}

/** A compact local date and time: "2026-11-22 17:25:11". */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function shortId(uuid: string): string {
  return uuid.slice(-8);
}
