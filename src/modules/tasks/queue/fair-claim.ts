import type { Executor } from '../../../db/connect.js';
import type { TaskRecord } from '../tasks-record.js';
import { type Candidate, chooseFair, groupOf, KEYLESS } from './fair-claim-fns.js';
import type { FairQueueRepo } from './fair-queue-repo.js';

/** Rounds of choosing again when a chosen task was taken meanwhile (locked by another transaction). */
const ROUNDS = 3;

/**
 * The tasks a claim of an agent with keyed work hands out, locked and in hand-out order (the
 * order of `chooseFair`), and the groups' serving times recorded. Runs under the claim's lock of
 * the agent row, so claims of one agent (on any instance) see each other's groups and holds.
 */
export async function lockFairly(
  repo: FairQueueRepo,
  trx: Executor,
  agent: { uuid: string; concurrencyPerKey: number | null },
  limit: number,
  now: string,
): Promise<TaskRecord[]> {
  const served = await repo.groupsAfterSweep(trx, agent.uuid);
  const remembered = new Map(served);
  // Nothing remembered: keyed groups were all forgotten, and the keyless group, served meanwhile
  // without being written down, counts as served before any of them.
  if (served.size === 0 && (await repo.keylessServed(trx, agent.uuid))) served.set(KEYLESS, 0);
  const held = agent.concurrencyPerKey === null ? new Map<string, number>() : await repo.heldPerKey(trx, agent.uuid);
  let candidates = await repo.candidates(trx, agent.uuid, limit, now);
  const lastSeq = Math.max(0, ...[...served.values()].map((s) => s ?? 0));
  const locked = new Map<string, TaskRecord>();
  let chosen: Candidate[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const state = { served: new Map(served), held: new Map(held), cap: agent.concurrencyPerKey };
    chosen = chooseFair(candidates, state, limit, lastSeq).chosen;
    const wanted = chosen.filter((c) => !locked.has(c.uuid)).map((c) => c.uuid);
    for (const task of await repo.lockChosen(trx, wanted)) locked.set(task.uuid, task);
    const gone = new Set(wanted.filter((uuid) => !locked.has(uuid)));
    if (gone.size === 0) break;
    candidates = candidates.filter((c) => !gone.has(c.uuid));
  }
  const out = chosen.filter((c) => locked.has(c.uuid));
  await recordServed(repo, trx, agent.uuid, { remembered, served, out, lastSeq });
  return out.map((c) => locked.get(c.uuid) as TaskRecord);
}

/**
 * Writes the serving numbers of the groups handed a task (and the keyless group's, when it was
 * just worked out). Not when only keyless tasks went out and no keyed group is remembered: with a
 * single group the order needs no memory, and the agent goes back to the plain claim.
 */
async function recordServed(
  repo: FairQueueRepo,
  trx: Executor,
  agentUuid: string,
  c: { remembered: Map<string, number | null>; served: Map<string, number | null>; out: Candidate[]; lastSeq: number },
): Promise<void> {
  const keyedKnown = [...c.remembered.keys()].some((g) => g !== KEYLESS);
  if (!keyedKnown && c.out.every((t) => t.key === null)) return;
  const writes = new Map<string, number | null>();
  if (c.served.has(KEYLESS) && !c.remembered.has(KEYLESS)) writes.set(KEYLESS, c.served.get(KEYLESS) ?? null);
  let seq = c.lastSeq;
  for (const task of c.out) writes.set(groupOf(task.key), ++seq);
  await repo.saveServed(trx, agentUuid, [...writes]);
}
