import { durationMs, nanosToIso } from './otlp-values-fns.js';
import type { SpanRow } from './telemetry-fns.js';

/** A trace as the list returns it. */
export interface TraceSummary {
  trace_id: string;
  root_span_id: string | null;
  name: string | null;
  service_name: string | null;
  start_time: string;
  end_time: string;
  duration_ms: number;
  span_count: number;
  error_count: number;
  status: 'ok' | 'error';
  agent_id: string | null;
  agent_name: string | null;
  task_id: string | null;
  input_tokens: number;
  output_tokens: number;
}

/** Start order, ties by span id (the stored keys sort the same here as in SQL). */
export const byStart = (a: SpanRow, b: SpanRow) =>
  a.start_key < b.start_key ? -1 : a.start_key > b.start_key ? 1 : a.span_id < b.span_id ? -1 : 1;

/**
 * A trace's spans in start order where a span and its descendants that started at the same
 * instant (a webhook delivery and the task it created) list the parent first; otherwise
 * ties go by span id. Cycles in the parent links (hostile input) are cut.
 */
export function inTreeOrder(spans: SpanRow[]): SpanRow[] {
  const byId = new Map(spans.map((s) => [s.span_id, s]));
  const depth = new Map<string, number>();
  const depthOf = (span: SpanRow): number => {
    const known = depth.get(span.span_id);
    if (known !== undefined) return known;
    let d = 0;
    const seen = new Set([span.span_id]);
    for (let p = span.parent_span_id; p !== null && byId.has(p) && !seen.has(p); ) {
      seen.add(p);
      d++;
      p = byId.get(p)?.parent_span_id ?? null;
    }
    depth.set(span.span_id, d);
    return d;
  };
  // Each depth once, before the sort: the comparator then reads numbers (10,000 spans sorted in a
  // fraction of the time the lookups inside it took).
  const keyed = spans.map((span) => ({ span, depth: depthOf(span) }));
  keyed.sort((a, b) =>
    a.span.start_key !== b.span.start_key
      ? a.span.start_key < b.span.start_key
        ? -1
        : 1
      : a.depth - b.depth || byStart(a.span, b.span),
  );
  return keyed.map((k) => k.span);
}

/**
 * The root of a trace: the span without a parent; else the earliest-starting span whose parent is
 * not stored (ties: smallest span id).
 */
export function rootOf(spans: SpanRow[]): SpanRow | null {
  const sorted = [...spans].sort(byStart);
  const ids = new Set(spans.map((s) => s.span_id));
  return (
    sorted.find((s) => s.parent_span_id === null) ??
    sorted.find((s) => s.parent_span_id !== null && !ids.has(s.parent_span_id)) ??
    sorted[0] ??
    null
  );
}

/** The agent and task of a trace: those of its earliest-starting span that has one. */
export function traceIdentity(spans: SpanRow[]) {
  const sorted = [...spans].sort(byStart);
  const agent = sorted.find((s) => s.agent_id !== null);
  return {
    agent_id: agent?.agent_id ?? null,
    agent_name: sorted.find((s) => s.agent_name !== null)?.agent_name ?? null,
    task_id: sorted.find((s) => s.task_id !== null)?.task_id ?? null,
  };
}

const AGENT_OPERATIONS = new Set(['invoke_agent', 'create_agent']);
const hasUsage = (s: SpanRow) => s.input_tokens !== null || s.output_tokens !== null;

/**
 * Whether a usage-carrying span counts: an agent span's usage is the sum of its model calls, so it
 * counts only when no other span of its trace carries usage.
 */
export function countsForUsage(span: SpanRow, traceSpans: SpanRow[]): boolean {
  if (!hasUsage(span)) return false;
  if (!AGENT_OPERATIONS.has(span.operation_name ?? '')) return true;
  return !traceSpans.some((o) => o.span_id !== span.span_id && hasUsage(o));
}

/** The summary of one trace from its aggregate and its live spans. */
export function summarise(
  agg: { trace_id: string; start_key: string; end_key: string; span_count: number; error_count: number },
  spans: SpanRow[],
): TraceSummary {
  const root = rootOf(spans);
  const start = BigInt(agg.start_key);
  const end = BigInt(agg.end_key);
  let input = 0;
  let output = 0;
  for (const s of spans) {
    if (!countsForUsage(s, spans)) continue;
    input += s.input_tokens ?? 0;
    output += s.output_tokens ?? 0;
  }
  return {
    trace_id: agg.trace_id,
    root_span_id: root?.span_id ?? null,
    name: root?.name ?? null,
    service_name: root?.service_name ?? null,
    start_time: nanosToIso(start),
    end_time: nanosToIso(end),
    duration_ms: durationMs(start, end),
    span_count: agg.span_count,
    error_count: agg.error_count,
    status: agg.error_count > 0 ? 'error' : 'ok',
    ...traceIdentity(spans),
    input_tokens: input,
    output_tokens: output,
  };
}

export type UsageKey = 'model' | 'agent' | 'day';
export interface UsageGroup {
  model?: string | null;
  agent_id?: string | null;
  day?: string | null;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  span_count: number;
}

const nullsLast = (a: string | null | undefined, b: string | null | undefined) =>
  a === b ? 0 : a == null ? 1 : b == null ? -1 : a < b ? -1 : 1;

/** One group as the database sums it (keys not asked for are null). */
export interface UsageSums {
  day: string | null;
  model: string | null;
  agent_id: string | null;
  input_tokens: number;
  output_tokens: number;
  span_count: number;
}

/** The fetch_usage answer from the database's sums: only the asked keys, sorted, with totals. */
export function usageAnswer(rows: UsageSums[], keys: ReadonlySet<UsageKey>) {
  const totals = { input_tokens: 0, output_tokens: 0, total_tokens: 0, span_count: 0 };
  const groups = rows.map((r) => {
    const group: UsageGroup = { input_tokens: 0, output_tokens: 0, total_tokens: 0, span_count: 0 };
    if (keys.has('model')) group.model = r.model;
    if (keys.has('agent')) group.agent_id = r.agent_id;
    if (keys.has('day')) group.day = r.day;
    for (const t of [group, totals]) {
      t.input_tokens += r.input_tokens;
      t.output_tokens += r.output_tokens;
      t.total_tokens += r.input_tokens + r.output_tokens;
      t.span_count += r.span_count;
    }
    return group;
  });
  const sorted = groups.sort(
    (a, b) => nullsLast(a.day, b.day) || nullsLast(a.model, b.model) || nullsLast(a.agent_id, b.agent_id),
  );
  return { groups: sorted, totals };
}

/** An opaque cursor naming the endpoint that issued it and the last item's sort position. */
export function encodeCursor(endpoint: string, key: string, id: string): string {
  return Buffer.from(JSON.stringify([endpoint, key, id])).toString('base64url');
}

/** The position a cursor continues after, or null when this endpoint did not issue it. */
export function decodeCursor(endpoint: string, cursor: string): { key: string; id: string } | null {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== endpoint) return null;
    const [, key, id] = parsed;
    if (typeof key !== 'string' || !/^\d{20}$/.test(key) || typeof id !== 'string' || !/^[0-9a-f-]{1,36}$/.test(id)) {
      return null;
    }
    return { key, id };
  } catch {
    return null;
  }
}
