import type { ModelUsageRow, ModelUsageTotals } from './types';

/** Usage of one credential and upstream model over a whole period. */
export interface UsageLine extends ModelUsageTotals {
  provider_credential_uuid: string;
  provider_credential_name: string | null;
  model: string;
}

const DAY_MS = 86_400_000;

/** The UTC dates of the `days` days up to and including today: `{from, to}` as YYYY-MM-DD. */
export function lastDays(days: number, now = Date.now()): { from: string; to: string } {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { from: day(now - (days - 1) * DAY_MS), to: day(now) };
}

/**
 * Sums the per-day rows into one line per credential and model, sorted by credential name (a
 * deleted credential last), then model.
 */
export function byCredentialAndModel(rows: readonly ModelUsageRow[]): UsageLine[] {
  const lines = new Map<string, UsageLine>();
  for (const r of rows) {
    const key = `${r.provider_credential_uuid}\n${r.model}`;
    const line = lines.get(key) ?? {
      provider_credential_uuid: r.provider_credential_uuid,
      provider_credential_name: r.provider_credential_name,
      model: r.model,
      calls: 0,
      errors: 0,
      input_tokens: 0,
      output_tokens: 0,
      cost_usd: 0,
      cache_hits: 0,
    };
    line.calls += r.calls;
    line.errors += r.errors;
    line.input_tokens += r.input_tokens;
    line.output_tokens += r.output_tokens;
    line.cost_usd += r.cost_usd;
    line.cache_hits += r.cache_hits;
    lines.set(key, line);
  }
  return [...lines.values()].sort(
    (a, b) =>
      (a.provider_credential_name ?? '\uffff').localeCompare(b.provider_credential_name ?? '\uffff') ||
      a.model.localeCompare(b.model) ||
      a.provider_credential_uuid.localeCompare(b.provider_credential_uuid),
  );
}

/** The share of calls answered from the cache, as "66.7%"; "—" when there were no calls. */
export function hitRate(cacheHits: number, calls: number): string {
  if (calls <= 0) return '—';
  return `${((cacheHits / calls) * 100).toFixed(1)}%`;
}

/** A cost in US dollars, to a tenth of a cent or finer: "$0.0123", "$12.50". */
export function usd(amount: number): string {
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
}
