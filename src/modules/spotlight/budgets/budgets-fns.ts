/** Pure rules of budgets: windows, money on the wire, which limit refuses a call. */

export type BudgetScope = 'account' | 'platform_key' | 'agent' | 'task';
export type WindowKind = 'month' | 'day' | 'task';

/** Refusal priority when several limits are reached at once (the narrowest first). */
export const SCOPE_PRIORITY: readonly BudgetScope[] = ['task', 'agent', 'platform_key', 'account'];

/** Largest limit accepted, in USD. */
export const MAX_LIMIT_USD = 1_000_000;
const NANOS_PER_USD = 1e9;

/** USD as the service writes it: an exact multiple of 1e-9, as JavaScript writes `nanos / 1e9`. */
export const usdOf = (nanos: number): number => nanos / NANOS_PER_USD;
/** An amount received in USD, rounded to the nearest nano-dollar. */
export const nanosOf = (usd: number): number => Math.round(usd * NANOS_PER_USD);

/** A bigint column read back (PostgreSQL answers a string); null stays null. */
export const dbNanos = (v: number | string | bigint | null | undefined): number | null =>
  v === null || v === undefined ? null : Number(v);

/** The UTC calendar month around `ms`: [start, end). */
export function monthWindow(ms: number): { start: string; end: string } {
  const d = new Date(ms);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { start: new Date(start).toISOString(), end: new Date(end).toISOString() };
}

/** The UTC calendar day around `ms`: [start, end). */
export function dayWindow(ms: number): { start: string; end: string } {
  const d = new Date(ms);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return { start: new Date(start).toISOString(), end: new Date(start + 86_400_000).toISOString() };
}

/** The window key a record's spend goes to, by the record's `created_at`; '' for a task's whole life. */
export function windowStartOf(kind: WindowKind, createdAt: string): string {
  const ms = Date.parse(createdAt);
  if (kind === 'month') return monthWindow(ms).start;
  if (kind === 'day') return dayWindow(ms).start;
  return '';
}

/** The window each scope's limit applies to. */
export const WINDOW_OF: Record<BudgetScope, WindowKind> = {
  account: 'month',
  platform_key: 'month',
  agent: 'day',
  task: 'task',
};

/** One scope's state at the moment of a call: its limit and committed spend (nanos). */
export interface ScopeState {
  scope: BudgetScope;
  id: string | null;
  limitNanos: number | null;
  spentNanos: number;
  /** End of the window (ISO); null for a task. */
  end: string | null;
}

/** A call refused by a budget: which scope, and what its answer says. */
export interface Refusal extends ScopeState {
  limitNanos: number;
  message: string;
}

/** A limit is reached when spend ≥ limit (so a limit of 0 refuses every call). */
export const reached = (s: ScopeState) => s.limitNanos !== null && s.spentNanos >= s.limitNanos;

const WINDOW_WORDS: Record<WindowKind, string> = { month: 'month', day: 'day', task: 'task' };

/** The first reached limit among the call's scopes, by SCOPE_PRIORITY; null when none is. */
export function refusalOf(states: ScopeState[]): Refusal | null {
  for (const scope of SCOPE_PRIORITY) {
    const s = states.find((x) => x.scope === scope);
    if (!s || !reached(s)) continue;
    const limitNanos = s.limitNanos as number;
    const message = `Budget exceeded: ${scope} limit of ${usdOf(limitNanos)} USD for this ${WINDOW_WORDS[WINDOW_OF[scope]]} reached (spent ${usdOf(s.spentNanos)} USD)`;
    return { ...s, limitNanos, message };
  }
  return null;
}

/** Whole seconds from `now` until `end`, at least 1. */
export const retryAfterSeconds = (end: string, now: number) => Math.max(1, Math.ceil((Date.parse(end) - now) / 1000));

/**
 * The answer of a refused call: 429 in OpenAI's shape, with the X-Taskhook-Budget-* headers and
 * X-Should-Retry: false (stock OpenAI SDKs then do not retry). Retry-After only when the window ends.
 */
export function refusalAnswer(r: Refusal, now: number) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-taskhook-budget-scope': r.scope,
    'x-taskhook-budget-limit-usd': String(usdOf(r.limitNanos)),
    'x-taskhook-budget-spent-usd': String(usdOf(r.spentNanos)),
    'x-should-retry': 'false',
  };
  if (r.end !== null) headers['retry-after'] = String(retryAfterSeconds(r.end, now));
  const body = { error: { message: r.message, type: 'insufficient_quota', param: null, code: 'budget_exceeded' } };
  return { status: 429, headers, body: JSON.stringify(body) };
}

/** Why a call to an unpriced model is refused while a budget applies to it. */
export const unpricedMessage = (upstreamModel: string) =>
  `Model ${upstreamModel} has no price and a budget applies to this call: add it to TASKHOOK_MODEL_PRICES_FILE`;

/**
 * The answer of a call refused because its model has no price while a budget applies (its cost
 * could not be counted against the limit): 400 in OpenAI's shape, code `model_not_priced`.
 */
export function unpricedAnswer(message: string) {
  const body = { error: { message, type: 'invalid_request_error', param: 'model', code: 'model_not_priced' } };
  return { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
