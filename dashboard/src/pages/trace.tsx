import { api } from '../api';
import type { Span } from '../types';
import { ErrorBox, Link, PageTitle, useLoad } from '../ui';

/** Orders spans depth-first under their parents, so the waterfall reads as a call tree. */
function tree(spans: Span[]): { span: Span; depth: number }[] {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string, Span[]>();
  for (const s of spans) {
    const parent = s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : '';
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const out: { span: Span; depth: number }[] = [];
  const walk = (parent: string, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      out.push({ span: s, depth });
      walk(s.span_id, depth + 1);
    }
  };
  walk('', 0);
  return out;
}

/** One trace as a waterfall: each span's bar placed by its start and length within the trace. */
export function TracePage({ traceId }: { traceId: string }) {
  const trace = useLoad(() => api.trace(traceId), [traceId]);
  const spans = trace.data?.spans ?? [];
  const start = Math.min(...spans.map((s) => Date.parse(s.start_time)));
  const end = Math.max(...spans.map((s) => Date.parse(s.start_time) + s.duration_ms));
  const total = Math.max(end - start, 1);
  return (
    <section>
      <p class="crumbs">
        <Link href="/telemetry">Telemetry</Link> / <span class="mono">{traceId.slice(0, 12)}</span>
      </p>
      <PageTitle title="Trace">
        Trace <span class="mono">{traceId.slice(0, 12)}</span>
      </PageTitle>
      <ErrorBox error={trace.error} />
      {spans.length > 0 && (
        <ol class="waterfall" aria-label="Spans">
          {tree(spans).map(({ span, depth }) => {
            const left = ((Date.parse(span.start_time) - start) / total) * 100;
            const width = Math.max((span.duration_ms / total) * 100, 0.5);
            const tokens = (span.input_tokens ?? 0) + (span.output_tokens ?? 0);
            return (
              <li key={span.span_id} class={`span-row ${span.status_code === 'error' ? 'span-error' : ''}`}>
                <div class="span-name" style={{ paddingLeft: `${depth * 1}rem` }}>
                  <strong>{span.name}</strong>
                  <span class="muted small">
                    {' '}
                    {span.service_name ?? ''} {span.response_model ?? span.request_model ?? ''}
                    {tokens > 0 ? ` · ${tokens} tokens` : ''}
                    {span.status_code === 'error'
                      ? ` · error${span.status_message ? `: ${span.status_message}` : ''}`
                      : ''}
                  </span>
                </div>
                <div class="span-track">
                  <span class="span-bar" style={{ left: `${left}%`, width: `${width}%` }} />
                </div>
                <div class="span-ms num small">{span.duration_ms.toFixed(1)} ms</div>
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
