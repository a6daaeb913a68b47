import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pickFair } from '../../../src/modules/callbacks/callbacks-fns.js';

const row = (workspaceUuid: string, n: number) => ({ workspaceUuid, id: `${workspaceUuid}-${n}` });

describe('pickFair', () => {
  it("takes at most perUser of one account, counting what it already has in flight, and skips to others' rows", () => {
    const due = [...[1, 2, 3, 4, 5, 6].map((n) => row('a', n)), row('b', 1), row('c', 1), row('c', 2)];
    const { take, full } = pickFair(due, new Map([['c', 3]]), 4, 16);
    expect(take.map((r) => r.id)).toEqual(['a-1', 'a-2', 'a-3', 'a-4', 'b-1', 'c-1']);
    expect(full.sort()).toEqual(['a', 'c']);
  });

  it('stops at room, oldest first', () => {
    const due = [row('a', 1), row('b', 1), row('a', 2), row('b', 2)];
    expect(pickFair(due, new Map(), 4, 3).take.map((r) => r.id)).toEqual(['a-1', 'b-1', 'a-2']);
  });

  it('never exceeds room or perUser, and takes every row it may', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 60 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.integer({ min: 0, max: 6 })),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 20 }),
        (users, heldObject, perUser, room) => {
          const due = users.map((u, i) => row(u, i));
          const held = new Map(Object.entries(heldObject));
          const { take, full } = pickFair(due, held, perUser, room);
          expect(take.length).toBeLessThanOrEqual(room);
          const counts = new Map(held);
          for (const r of take) counts.set(r.workspaceUuid, (counts.get(r.workspaceUuid) ?? 0) + 1);
          for (const r of take) expect(counts.get(r.workspaceUuid)).toBeLessThanOrEqual(Math.max(perUser, 0));
          for (const u of full) expect(counts.get(u) ?? 0).toBeGreaterThanOrEqual(perUser);
          // A row left out means the room was used up or its account had no slot left.
          const taken = new Set(take.map((r) => r.id));
          for (const r of due) {
            if (!taken.has(r.id))
              expect(take.length === room || (counts.get(r.workspaceUuid) ?? 0) >= perUser).toBe(true);
          }
        },
      ),
    );
  });
});
