import { describe, expect, it } from 'vitest';
import { createDecisionRecord, type DueItem, fairOrder } from '../../../src/modules/schedules/fair-fns.js';

const at = (second: number) => `2026-06-01T00:00:${String(second).padStart(2, '0')}.000Z`;
const item = (workspaceUuid: string, uuid: string, second: number): DueItem => ({
  workspaceUuid,
  uuid,
  nextRunAt: at(second),
});
const names = (xs: DueItem[]) => xs.map((x) => x.uuid);

describe('deciding in fair rounds across workspaces', () => {
  it("one workspace's backlog delays another's occurrence by one decision per workspace, not by the backlog", () => {
    // A has 500 occurrences due before B's only one: the global order would put B last.
    const backlog = Array.from({ length: 500 }, (_, i) => item('A', `a${String(i).padStart(3, '0')}`, 0));
    const order = fairOrder([...backlog, item('B', 'b', 30)], new Map());
    expect(order).toHaveLength(501);
    // Neither was decided before: the earlier due occurrence's workspace goes first in the round.
    expect(names(order.slice(0, 3))).toEqual(['a000', 'b', 'a001']);
  });

  it('takes each workspace’s earliest occurrence first (scheduled time, then schedule uuid)', () => {
    const order = fairOrder(
      [item('A', 'a-late', 20), item('A', 'a-z', 10), item('A', 'a-b', 10), item('B', 'b2', 5), item('B', 'b1', 5)],
      new Map(),
    );
    expect(names(order)).toEqual(['b1', 'a-b', 'b2', 'a-z', 'a-late']);
  });

  it('orders the workspaces of a round by their least recent decision, never decided first', () => {
    const record = createDecisionRecord();
    record.decided('B');
    record.decided('A');
    const due = [item('A', 'a1', 0), item('A', 'a2', 0), item('B', 'b1', 9), item('C', 'c1', 30)];
    // C never decided: first; then B (decided before A), then A; the second round holds only A.
    expect(names(fairOrder(due, record.latest))).toEqual(['c1', 'b1', 'a1', 'a2']);
    record.decided('B');
    expect(names(fairOrder(due, record.latest))).toEqual(['c1', 'a1', 'b1', 'a2']);
  });

  it('forgets the least recently decided workspaces first, which keeps them first', () => {
    const record = createDecisionRecord(2);
    record.decided('A');
    record.decided('B');
    record.decided('A');
    record.decided('C'); // B is forgotten: now as if never decided
    expect([...record.latest.keys()]).toEqual(['A', 'C']);
    const due = [item('A', 'a', 0), item('B', 'b', 50), item('C', 'c', 0)];
    expect(names(fairOrder(due, record.latest))).toEqual(['b', 'a', 'c']);
  });
});
