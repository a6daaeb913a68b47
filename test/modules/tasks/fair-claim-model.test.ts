import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { claimTasks, reportComplete, reportInputRequest, sendMessage, submitTask } from '../../helpers/tasks.js';

/**
 * A small reference model of the hand-out order (docs/api.md, "Concurrency keys"), written
 * straight from the rules and independent of src/: each hand-out takes the highest priority among
 * eligible tasks, then the group served least recently (never or forgotten first; ties: oldest
 * task), then that group's oldest task. Groups are forgotten as the service forgets them: a key
 * with no queued or held task at a claim (a task awaiting input is neither), and the keyless group
 * once no key is remembered (it then counts as served long ago when one of its tasks was ever
 * handed out).
 */
interface ModelTask {
  id: string;
  key: string | null;
  priority: number;
  createdAt: string;
  /** `waiting`: awaiting input (neither claimable nor held). */
  state: 'queued' | 'held' | 'waiting' | 'done';
  leaseId?: string;
}

class Model {
  tasks: ModelTask[] = [];
  served = new Map<string, number>();
  keylessEverServed = false;

  constructor(readonly cap: number | null) {}

  private older(a: ModelTask, b: ModelTask): boolean {
    return a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);
  }

  private forget(): void {
    for (const group of [...this.served.keys()]) {
      if (group === '') continue;
      if (!this.tasks.some((t) => t.key === group && (t.state === 'queued' || t.state === 'held'))) {
        this.served.delete(group);
      }
    }
    if (![...this.served.keys()].some((g) => g !== '')) this.served.delete('');
    if (this.served.size === 0 && this.keylessEverServed) this.served.set('', 0);
  }

  claim(max: number): ModelTask[] {
    this.forget();
    let seq = Math.max(0, ...this.served.values());
    const out: ModelTask[] = [];
    while (out.length < max) {
      const heldOf = (key: string) => this.tasks.filter((t) => t.key === key && t.state === 'held').length;
      const eligible = this.tasks.filter(
        (t) => t.state === 'queued' && (t.key === null || this.cap === null || heldOf(t.key) < this.cap),
      );
      if (eligible.length === 0) break;
      const top = Math.max(...eligible.map((t) => t.priority));
      let pick: ModelTask | undefined;
      for (const t of eligible.filter((x) => x.priority === top)) {
        if (!pick) {
          pick = t;
          continue;
        }
        const sa = this.served.get(t.key ?? '');
        const sb = this.served.get(pick.key ?? '');
        const sameGroup = (t.key ?? '') === (pick.key ?? '');
        const before = sameGroup || sa === sb ? this.older(t, pick) : sa === undefined || (sb !== undefined && sa < sb);
        if (before) pick = t;
      }
      const chosen = pick as ModelTask;
      chosen.state = 'held';
      this.served.set(chosen.key ?? '', ++seq);
      if (chosen.key === null) this.keylessEverServed = true;
      out.push(chosen);
    }
    return out;
  }
}

type Op =
  | { op: 'submit'; key: string | null; priority: number }
  | { op: 'claim'; max: number }
  | { op: 'done'; pick: number }
  | { op: 'ask'; pick: number }
  | { op: 'answer'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('submit' as const),
      key: fc.constantFrom(null, 'a', 'b', 'c'),
      priority: fc.constantFrom(5, 5, 5, 7),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('claim' as const), max: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('done' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('ask' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('answer' as const), pick: fc.nat() }) },
);

describe.each(DATABASES)('hand-out order against a reference model on $name', (database) => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { rateLimit: 1_000_000 } });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  it('claims hand out what the model hands out, in its order', { timeout: 240_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(null, 1, 2),
        fc.array(opArb, { minLength: 10, maxLength: 40, size: 'max' }),
        async (cap, ops) => {
          const agent = (await createAgent(t, user, { concurrency: 1000, concurrency_per_key: cap })).uuid;
          const model = new Model(cap);
          for (const op of ops) {
            if (op.op === 'submit') {
              const body = { message: 'm', priority: op.priority, concurrency_key: op.key };
              const r = await submitTask(t, user, agent, body);
              model.tasks.push({
                id: r.task_id,
                key: op.key,
                priority: op.priority,
                createdAt: r.created_at,
                state: 'queued',
              });
            } else if (op.op === 'claim') {
              const got = await claimTasks(t, user, agent, { max_tasks: op.max });
              const expected = model.claim(op.max);
              expect(got.map((x) => x.task_id)).toEqual(expected.map((x) => x.id));
              for (const [i, x] of got.entries()) (expected[i] as ModelTask).leaseId = x.lease_id;
            } else if (op.op === 'answer') {
              // The user answers: the task is claimable again (and counts as queued for its group).
              const waiting = model.tasks.filter((x) => x.state === 'waiting');
              const task = waiting[op.pick % Math.max(1, waiting.length)];
              if (!task) continue;
              expect((await sendMessage(t, user, agent, task.id, 'answer')).statusCode).toBe(200);
              task.state = 'queued';
            } else {
              const held = model.tasks.filter((x) => x.state === 'held');
              const task = held[op.pick % Math.max(1, held.length)];
              if (!task) continue;
              const lease = task.leaseId as string;
              const res =
                op.op === 'done'
                  ? await reportComplete(t, user, agent, task.id, lease)
                  : await reportInputRequest(t, user, agent, task.id, lease, 'which one?');
              expect(res.statusCode).toBe(200);
              task.state = op.op === 'done' ? 'done' : 'waiting';
            }
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});
