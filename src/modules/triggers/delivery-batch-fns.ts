/** A delivery id that still deduplicates (the accepted delivery holding it). */
export interface DedupHolder {
  uuid: string;
  triggerUuid: string;
  dedupKey: string;
  receivedAt: string;
}

/** What the plan needs of a delivery waiting to be written. */
export interface BatchMember {
  triggerUuid: string;
  /** The sender's delivery id, when it gave one. */
  dedupKey: string | null;
  nowMs: number;
}

const keyOf = (triggerUuid: string, key: string) => `${triggerUuid}\n${key}`;

/**
 * Which deliveries of one batch can be written together, and which holders' ids expire first
 * (24 h after their delivery, as the single path does). A delivery whose id is still held, or
 * repeats an id earlier in the batch, would break the batch's insert: it is written alone after
 * the batch commits, where today's path answers it the first 202.
 */
export function planDeliveryBatch<M extends BatchMember>(
  members: M[],
  holders: DedupHolder[],
  windowMs: number,
): { release: string[]; together: M[]; alone: M[] } {
  const held = new Map(holders.map((h) => [keyOf(h.triggerUuid, h.dedupKey), h]));
  const seen = new Set<string>();
  const release = new Set<string>();
  const together: M[] = [];
  const alone: M[] = [];
  for (const m of members) {
    if (m.dedupKey === null) {
      together.push(m);
      continue;
    }
    const key = keyOf(m.triggerUuid, m.dedupKey);
    if (seen.has(key)) {
      alone.push(m);
      continue;
    }
    seen.add(key);
    const holder = held.get(key);
    if (holder && Date.parse(holder.receivedAt) > m.nowMs - windowMs) {
      alone.push(m);
      continue;
    }
    if (holder) release.add(holder.uuid);
    together.push(m);
  }
  return { release: [...release], together, alone };
}
