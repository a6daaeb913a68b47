import { describe, expect, it } from 'vitest';
import { createPgListener } from '../../src/db/pg-listen.js';
import { createNotifier } from '../../src/lib/notifier.js';
import { POSTGRES_URL } from '../helpers/databases.js';

const log = { warn: () => undefined };

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe.runIf(POSTGRES_URL)('task notifier across instances (PostgreSQL)', () => {
  it('delivers every key published in a burst to the other instance, each at least once', async () => {
    const [la, lb] = [createPgListener(POSTGRES_URL as string), createPgListener(POSTGRES_URL as string)];
    const a = createNotifier({ db: la, log });
    const b = createNotifier({ db: lb, log });
    try {
      const heard = new Map<string, number>();
      const keys = Array.from({ length: 300 }, (_, i) => `agent-${i % 150}-${process.pid}`);
      for (const key of new Set(keys)) b.subscribe('work', key, () => heard.set(key, (heard.get(key) ?? 0) + 1));
      // Both listening: a probe published by a reaches b.
      const probe = `probe-${process.pid}`;
      let probed = false;
      b.subscribe('work', probe, () => {
        probed = true;
      });
      await until(() => {
        a.publish('work', probe);
        return probed;
      }, 'both notifiers to listen');
      // A burst within one turn of the event loop: sent in a few statements, not one each.
      for (const key of keys) a.publish('work', key);
      await until(() => heard.size === 150, 'all 150 keys');
      expect([...heard.values()].every((n) => n >= 1)).toBe(true);
    } finally {
      await a.close();
      await b.close();
      await Promise.all([la.close(), lb.close()]);
    }
  });
});
