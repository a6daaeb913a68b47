/** How a turn batcher writes what was queued in one turn of the event loop. */
export interface TurnBatch<T, R> {
  /** Most items one batch holds; a busier turn is cut into batches of at most this many, written side by side. */
  max: number;
  /**
   * Writes a batch of two or more items together (one transaction). Resolves to `answer`, which
   * every item it wrote gets, and the items it `left` out, which then go through `alone`. Items
   * are told apart by identity, so each queued item must be an object of its own. If it throws,
   * every item of the batch goes through `alone`.
   */
  together: (batch: T[]) => Promise<{ answer: R; left: readonly T[] }>;
  /** One item's own write: for a batch of one, the items left out, and each item of a failed batch. */
  alone: (item: T) => Promise<R>;
}

/**
 * Group commit in the caller's hands: the items queued in the same turn of the event loop are
 * written together, so under load an item costs a share of one commit instead of a commit of its
 * own. Each caller's promise settles once its own item is written (by `together` or `alone`), so
 * one bad item fails only its own caller, with exactly the answer its single write gives.
 * Returns the function that queues an item.
 */
export function createTurnBatcher<T, R>(how: TurnBatch<T, R>): (item: T) => Promise<R> {
  interface Waiting {
    item: T;
    resolve: (answer: R) => void;
    reject: (err: unknown) => void;
  }
  let pending: Waiting[] = [];

  async function flush(batch: Waiting[]) {
    let alone = batch;
    if (batch.length > 1) {
      try {
        const { answer, left } = await how.together(batch.map((w) => w.item));
        const out = new Set(left);
        alone = [];
        for (const w of batch) {
          if (out.has(w.item)) alone.push(w);
          else w.resolve(answer);
        }
      } catch {
        // Each alone: one bad item fails only its own caller.
      }
    }
    await Promise.all(alone.map((w) => how.alone(w.item).then(w.resolve, w.reject)));
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      if (pending.length > 1) return;
      setImmediate(() => {
        const all = pending;
        pending = [];
        for (let i = 0; i < all.length; i += how.max) void flush(all.slice(i, i + how.max));
      });
    });
}
