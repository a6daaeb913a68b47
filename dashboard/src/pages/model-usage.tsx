import { api } from '../api';
import type { ModelUsageTotals } from '../types';
import { Empty, ErrorBox, useLoad } from '../ui';
import { byCredentialAndModel, hitRate, lastDays, usd } from '../usage-fns';

/** Days the usage section covers, today (UTC) included. */
const DAYS = 30;

const n = (v: number) => v.toLocaleString('en-US');

/**
 * Calls through the model proxy per credential and upstream model over the last 30 days: calls,
 * errors, tokens, cost, cache hits and the cache hit rate, with the totals.
 */
export function ModelUsageSection() {
  const usage = useLoad(() => {
    const { from, to } = lastDays(DAYS);
    return api.modelUsage(from, to);
  }, []);
  const lines = byCredentialAndModel(usage.data?.usage ?? []);
  const totals = usage.data?.totals;
  return (
    <section aria-labelledby="model-usage">
      <h2 id="model-usage">Model usage, last {DAYS} days</h2>
      <ErrorBox error={usage.error} />
      {usage.data && lines.length === 0 && (
        <Empty title="No model calls yet">
          <p>Calls through the proxy appear here per credential and model, with how many the cache answered.</p>
        </Empty>
      )}
      {totals && lines.length > 0 && (
        <div class="table-wrap">
          <table aria-label="Model usage">
            <thead>
              <tr>
                <th scope="col">Credential</th>
                <th scope="col">Model</th>
                <th scope="col" class="num">
                  Calls
                </th>
                <th scope="col" class="num">
                  Errors
                </th>
                <th scope="col" class="num wide-only">
                  Input tokens
                </th>
                <th scope="col" class="num wide-only">
                  Output tokens
                </th>
                <th scope="col" class="num">
                  Cost
                </th>
                <th scope="col" class="num">
                  Cache hits
                </th>
                <th scope="col" class="num">
                  Hit rate
                </th>
              </tr>
            </thead>
            <tbody>
              {lines.map((l) => (
                <tr key={`${l.provider_credential_uuid} ${l.model}`}>
                  <td class="strong">{l.provider_credential_name ?? <span class="muted">deleted credential</span>}</td>
                  <td class="mono small break">{l.model}</td>
                  <Counters of={l} />
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <td colSpan={2}>Total</td>
                <Counters of={totals} />
              </tr>
            </tfoot>
          </table>
        </div>
      )}
      <p class="muted small">
        UTC days {usage.data ? `${usage.data.from} to ${usage.data.to}` : ''}. A cache hit is a call answered from the
        response cache without going upstream; it still counts as a call.
      </p>
    </section>
  );
}

/** The counters of one row or of the totals, one cell each. */
function Counters({ of: t }: { of: ModelUsageTotals }) {
  return (
    <>
      <td class="num">{n(t.calls)}</td>
      <td class="num">{n(t.errors)}</td>
      <td class="num wide-only">{n(t.input_tokens)}</td>
      <td class="num wide-only">{n(t.output_tokens)}</td>
      <td class="num">{usd(t.cost_usd)}</td>
      <td class="num">{n(t.cache_hits)}</td>
      <td class="num">{hitRate(t.cache_hits, t.calls)}</td>
    </>
  );
}
