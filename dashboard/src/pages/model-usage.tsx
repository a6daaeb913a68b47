import { api } from '../api';
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
                  <td class="num">{n(l.calls)}</td>
                  <td class="num">{n(l.errors)}</td>
                  <td class="num wide-only">{n(l.input_tokens)}</td>
                  <td class="num wide-only">{n(l.output_tokens)}</td>
                  <td class="num">{usd(l.cost_usd)}</td>
                  <td class="num">{n(l.cache_hits)}</td>
                  <td class="num">{hitRate(l.cache_hits, l.calls)}</td>
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <td colSpan={2}>Total</td>
                <td class="num">{n(totals.calls)}</td>
                <td class="num">{n(totals.errors)}</td>
                <td class="num wide-only">{n(totals.input_tokens)}</td>
                <td class="num wide-only">{n(totals.output_tokens)}</td>
                <td class="num">{usd(totals.cost_usd)}</td>
                <td class="num">{n(totals.cache_hits)}</td>
                <td class="num">{hitRate(totals.cache_hits, totals.calls)}</td>
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
