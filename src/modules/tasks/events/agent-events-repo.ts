import { CompiledQuery, SqliteAdapter } from 'kysely';
import { chunks, insertRows, MAX_PARAMETERS } from '../../../db/batches.js';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { fromDbJson, toDbJson } from '../../../db/json.js';
import type { ConversationMessage, TaskView } from '../tasks-schemas.js';
import type { StoredTaskEvent } from './task-events-fns.js';

/** A task event to write, with the agent whose stream numbers it. */
export interface AgentTaskEvent {
  agentUuid: string;
  taskUuid: string;
  seq: number;
  data: StoredTaskEvent;
  createdAt: string;
}

const EVENT_COLUMNS = ['task_uuid', 'seq', 'data', 'created_at', 'agent_uuid', 'agent_seq'] as const;
/** Adds each agent's count to its counter and answers the new value (the last number of the batch). */
const COUNT =
  'on conflict (agent_uuid) do update set last_seq = agent_event_seqs.last_seq + excluded.last_seq returning agent_uuid, last_seq';

/**
 * How many events of each agent `events` holds, agents in uuid order (the order their counters
 * are locked in, so two transactions never wait on each other's counters in a cycle), and each
 * event's distance from its agent's last (0 for the last of an agent).
 */
function countByAgent(events: readonly AgentTaskEvent[]) {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.agentUuid, (counts.get(e.agentUuid) ?? 0) + 1);
  const seen = new Map<string, number>();
  const back = events.map((e) => {
    const n = (seen.get(e.agentUuid) ?? 0) + 1;
    seen.set(e.agentUuid, n);
    return (counts.get(e.agentUuid) as number) - n;
  });
  const agents = [...counts.keys()].sort();
  return { agents, counts, back };
}

/**
 * PostgreSQL, in one statement (one round trip while the counters are held): the counters' upsert
 * in a CTE, and the events numbered from what it returns.
 */
async function appendPg(trx: Executor, events: readonly AgentTaskEvent[]): Promise<void> {
  const { agents, counts, back } = countByAgent(events);
  const values: unknown[] = [];
  const counters: string[] = [];
  for (const agent of agents) {
    values.push(agent, counts.get(agent));
    counters.push(`($${values.length - 1}, $${values.length})`);
  }
  const rows: string[] = [];
  for (const [i, e] of events.entries()) {
    const at = values.length;
    values.push(e.taskUuid, e.seq, toDbJson(e.data), e.createdAt, e.agentUuid, back[i]);
    rows.push(
      `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, (select last_seq from c where c.agent_uuid = $${at + 5}) - $${at + 6})`,
    );
  }
  const text =
    `with c as (insert into agent_event_seqs (agent_uuid, last_seq) values ${counters.join(', ')} ${COUNT}) ` +
    `insert into task_events (${EVENT_COLUMNS.join(', ')}) values ${rows.join(', ')}`;
  await trx.executeQuery(CompiledQuery.raw(text, values));
}

/** SQLite: the counters, then the events (its one writer already orders transactions). */
async function appendSqlite(trx: Executor, events: readonly AgentTaskEvent[]): Promise<void> {
  const { agents, counts, back } = countByAgent(events);
  const last = new Map<string, number>();
  const counted = await insertRows<{ agent_uuid: string; last_seq: number }>(
    trx,
    'agent_event_seqs',
    ['agent_uuid', 'last_seq'],
    agents.flatMap((agent) => [agent, counts.get(agent)]),
    COUNT,
  );
  for (const row of counted) last.set(row.agent_uuid, Number(row.last_seq));
  const values: unknown[] = [];
  for (const [i, e] of events.entries()) {
    const seq = (last.get(e.agentUuid) as number) - (back[i] as number);
    values.push(e.taskUuid, e.seq, toDbJson(e.data), e.createdAt, e.agentUuid, seq);
  }
  await insertRows(trx, 'task_events', EVENT_COLUMNS, values);
}

/**
 * The agent-wide view of `task_events`: every task event also carries its agent and its number in
 * that agent's stream (`agent_seq`), 1, 2, 3… per agent. The number comes from the agent's row in
 * `agent_event_seqs`, counted up in the writing transaction just before it commits (the writer
 * calls `append` from `beforeCommit`): the counter's row lock is held until that commit, so the
 * next transaction of the agent gets its numbers only once this one's are visible. Numbers are
 * therefore handed out in commit order, and a reader that has seen number n has seen every number
 * below it: a stream resuming after n never skips an event that committed late.
 */
export const agentEventsRepo = {
  /** Writes events (in the order of their changes) and numbers them in their agents' streams. */
  async append(trx: Executor, events: readonly AgentTaskEvent[]): Promise<void> {
    if (events.length === 0) return;
    const sqlite = trx.getExecutor().adapter instanceof SqliteAdapter;
    // Numbering per statement stays in order: each part adds its own count after the previous part's.
    for (const part of chunks(events, Math.floor(MAX_PARAMETERS / (EVENT_COLUMNS.length + 2)))) {
      await withDbErrors(sqlite ? appendSqlite(trx, part) : appendPg(trx, part));
    }
  },

  /** The last number the agent's stream handed out (0: none yet). */
  async latest(ex: Executor, agentUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex.selectFrom('agent_event_seqs').select('last_seq').where('agent_uuid', '=', agentUuid).executeTakeFirst(),
    );
    return row ? Number(row.last_seq) : 0;
  },

  /** Up to `limit` events of the agent's stream after number `after`, in order. */
  async after(ex: Executor, agentUuid: string, after: number, limit: number) {
    const rows = await withDbErrors(
      ex
        .selectFrom('task_events')
        .select(['agent_seq', 'task_uuid', 'data'])
        .where('agent_uuid', '=', agentUuid)
        .where('agent_seq', '>', after)
        .orderBy('agent_seq')
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => ({
      id: Number(r.agent_seq),
      taskUuid: r.task_uuid,
      data: fromDbJson<StoredTaskEvent | TaskView>(r.data),
    }));
  },

  /** The original message and conversation of each listed task still there, by task id. */
  async conversations(ex: Executor, taskUuids: readonly string[]) {
    const out = new Map<string, { message: string; messages: ConversationMessage[] }>();
    if (taskUuids.length === 0) return out;
    const rows = await withDbErrors(
      ex.selectFrom('tasks').select(['uuid', 'message', 'messages']).where('uuid', 'in', taskUuids).execute(),
    );
    for (const r of rows) out.set(r.uuid, { message: r.message, messages: fromDbJson(r.messages) });
    return out;
  },
};

export type AgentEventsRepo = typeof agentEventsRepo;
