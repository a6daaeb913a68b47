import { useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import type { TraceSummary, UsageGroup } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Time, useLoad } from '../ui';

const DAYS = 14;
const PALETTE = ['#3b5bdb', '#2b8a3e', '#b35c00', '#ae3ec9', '#0c8599', '#c92a2a', '#5c940d', '#495057'];

/** Token usage per day, stacked by model, as plain SVG (no chart library needed for this). */
function UsageChart({ groups }: { groups: UsageGroup[] }) {
  const days = [...new Set(groups.map((g) => g.day ?? ''))].filter(Boolean).sort();
  const models = [...new Set(groups.map((g) => g.model ?? 'unknown'))];
  if (days.length === 0) return <p class="muted">No token usage recorded in the last {DAYS} days.</p>;
  const perDay = days.map((day) => groups.filter((g) => g.day === day));
  const max = Math.max(...perDay.map((gs) => gs.reduce((sum, g) => sum + g.total_tokens, 0)), 1);
  const width = 640;
  const height = 180;
  const bar = Math.min(40, (width - 40) / days.length - 6);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height + 24}`} role="img" aria-label="Tokens per day by model">
        {perDay.map((gs, i) => {
          let y = height;
          const x = 40 + i * ((width - 40) / days.length);
          return (
            <g key={days[i]}>
              {gs.map((g) => {
                const h = (g.total_tokens / max) * (height - 10);
                y -= h;
                const color = PALETTE[models.indexOf(g.model ?? 'unknown') % PALETTE.length];
                return (
                  <rect key={g.model ?? 'unknown'} x={x} y={y} width={bar} height={h} fill={color}>
                    <title>{`${days[i]} ${g.model ?? 'unknown'}: ${g.total_tokens} tokens`}</title>
                  </rect>
                );
              })}
              <text x={x + bar / 2} y={height + 16} text-anchor="middle" class="axis">
                {days[i]?.slice(5)}
              </text>
            </g>
          );
        })}
        <text x={0} y={12} class="axis">
          {max.toLocaleString()}
        </text>
        <text x={0} y={height} class="axis">
          0
        </text>
      </svg>
      <figcaption class="legend">
        {models.map((m, i) => (
          <span key={m}>
            <span class="swatch" style={{ background: PALETTE[i % PALETTE.length] }} aria-hidden="true" /> {m}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

function TraceRows({ traces }: { traces: TraceSummary[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Trace</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Duration
            </th>
            <th scope="col" class="num wide-only">
              Spans
            </th>
            <th scope="col" class="num wide-only">
              Tokens
            </th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {traces.map((tr) => (
            <tr key={tr.trace_id}>
              <td>
                <Link href={`/telemetry/traces/${tr.trace_id}`} class="strong">
                  {tr.name ?? tr.trace_id.slice(0, 12)}
                </Link>
                <div class="muted small">
                  {[tr.service_name, tr.agent_name].filter(Boolean).join(' · ') || tr.trace_id}
                </div>
              </td>
              <td>
                <span class={`status status-${tr.status === 'error' ? 'failed' : 'completed'}`}>{tr.status}</span>
              </td>
              <td class="num">{tr.duration_ms.toFixed(1)} ms</td>
              <td class="num wide-only">{tr.span_count}</td>
              <td class="num wide-only">{(tr.input_tokens + tr.output_tokens).toLocaleString()}</td>
              <td>
                <Time iso={tr.start_time} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Traces with filters, and token usage per day and model. */
export function TelemetryPage() {
  const params = new URLSearchParams(location.search);
  const [filters, setFilters] = useState({
    service: params.get('service') ?? '',
    status: params.get('status') ?? '',
    task_id: params.get('task_id') ?? '',
  });
  const [draft, setDraft] = useState(filters);
  const from = new Date(Date.now() - DAYS * 86_400_000).toISOString().slice(0, 10);
  const traces = useLoad(
    () => api.traces(Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== ''))),
    [filters.service, filters.status, filters.task_id],
  );
  const usage = useLoad(() => api.usage(`${from}T00:00:00.000Z`), [from]);
  const list = traces.data?.traces ?? [];
  return (
    <section>
      <PageTitle title="Telemetry">Telemetry</PageTitle>
      <h2>Token usage, last {DAYS} days</h2>
      <ErrorBox error={usage.error} />
      {usage.data && <UsageChart groups={usage.data.groups} />}
      <h2>Traces</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
          const q = new URLSearchParams(Object.entries(draft).filter(([, v]) => v !== '')).toString();
          navigate(`/telemetry${q ? `?${q}` : ''}`, { replace: true });
        }}
      >
        <label class="inline">
          Service
          <input value={draft.service} onInput={(e) => setDraft({ ...draft, service: e.currentTarget.value })} />
        </label>
        <label class="inline">
          Status
          <select value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}>
            <option value="">all</option>
            <option value="ok">ok</option>
            <option value="error">error</option>
          </select>
        </label>
        <label class="inline">
          Task
          <input value={draft.task_id} onInput={(e) => setDraft({ ...draft, task_id: e.currentTarget.value })} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={traces.error} />
      {traces.data && list.length === 0 && (
        <Empty title="No traces yet">
          <p>
            Create an ingest token under Keys and point your agent's OpenTelemetry exporter at{' '}
            <code>/telemetry/ingest_http</code>; the service's own spans for your tasks show up here too.
          </p>
        </Empty>
      )}
      {list.length > 0 && <TraceRows traces={list} />}
    </section>
  );
}
