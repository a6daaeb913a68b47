import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SpanRow } from '../../../src/modules/telemetry/telemetry-fns.js';
import { inTreeOrder } from '../../../src/modules/telemetry/telemetry-query-fns.js';

const span = (span_id: string, parent_span_id: string | null, start_key: string) =>
  ({ span_id, parent_span_id, start_key }) as SpanRow;

describe('inTreeOrder', () => {
  it('lists a parent before the children that started at the same instant, whatever their ids', () => {
    const ordered = inTreeOrder([span('a', 'f', '1'), span('b', null, '2'), span('f', null, '1'), span('0', 'a', '1')]);
    expect(ordered.map((s) => s.span_id)).toEqual(['f', 'a', '0', 'b']);
  });

  it('keeps start order first, and survives parent cycles', () => {
    const ordered = inTreeOrder([span('x', 'y', '1'), span('y', 'x', '1'), span('z', null, '0')]);
    expect(ordered.map((s) => s.span_id)).toEqual(['z', 'x', 'y']);
  });

  it('is a permutation in non-decreasing start order for any input', () => {
    const ids = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ id: ids, parent: fc.option(ids), start: fc.constantFrom('1', '2', '3') }), {
          selector: (r) => r.id,
        }),
        (rows) => {
          const spans = rows.map((r) => span(r.id, r.parent, r.start));
          const ordered = inTreeOrder(spans);
          expect([...ordered].sort((p, q) => p.span_id.localeCompare(q.span_id))).toEqual(
            [...spans].sort((p, q) => p.span_id.localeCompare(q.span_id)),
          );
          for (let i = 1; i < ordered.length; i++)
            expect((ordered[i - 1] as SpanRow).start_key <= (ordered[i] as SpanRow).start_key).toBe(true);
        },
      ),
    );
  });
});
