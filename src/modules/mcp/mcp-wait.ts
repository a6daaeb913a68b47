import type { Db } from '../../db/connect.js';
import type { Notifier } from '../../lib/notifier.js';
import { watchTask } from '../tasks/events/task-watch.js';
import { FINAL_STATUSES } from '../tasks/tasks-fns.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import type { McpRepo } from './mcp-repo.js';

/** Where a waiting answer writes its notifications and server requests (the open SSE stream). */
export interface McpChannel {
  send(message: object): void;
  /** Aborts when the client hung up, the credential stopped holding, or the app closes. */
  readonly signal: AbortSignal;
}

/** The JSON-RPC id of the question asked when the task had `position` messages. */
export const elicitationId = (taskUuid: string, position: number) => `taskhook-elicit:${taskUuid}:${position}`;

/** `taskhook-elicit:<task>:<n>` read back, or null. */
export function parseElicitationId(id: unknown): { taskUuid: string; position: number } | null {
  if (typeof id !== 'string') return null;
  const match = /^taskhook-elicit:([0-9a-f-]{36}):(\d{1,9})$/.exec(id);
  return match ? { taskUuid: match[1] as string, position: Number(match[2]) } : null;
}

/** While a question is open, declines (written by any instance) are looked for this often. */
const DECLINE_POLL_MS = 1000;

export interface WaitOptions {
  /** Milliseconds; Infinity for tasks/result. */
  maxMs: number;
  progressToken?: string | number;
  /** The client declared elicitation. */
  ask: boolean;
  /** Task mode (tasks/result): never ends on awaiting_input; related-task meta on questions. */
  taskMode: boolean;
}

/**
 * Waits for the task as 18.4–18.6 describe: progress notifications while it runs, a question by
 * elicitation while it awaits input, until it finishes (or awaits input, plain mode), the time
 * runs out or the channel closes. @returns the task as it is then.
 */
export async function waitForTask(
  deps: {
    db: Db;
    repo: McpRepo;
    tasks: Pick<TasksService, 'requireTask'>;
    notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
  },
  ref: TaskRef,
  channel: McpChannel,
  options: WaitOptions,
): Promise<TaskRecord> {
  const deadline = performance.now() + options.maxMs;
  let lastProgress = 0;
  /** The question open on this stream (its position), or null. */
  let open: number | null = null;
  const asked = new Set<number>();
  const watch = watchTask(deps.notifier, ref.taskUuid, { signal: channel.signal });
  try {
    for (;;) {
      const task = await deps.tasks.requireTask(ref);
      const position = task.messages.length;
      if (open !== null && (task.status !== 'awaiting_input' || position !== open)) {
        channel.send({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: elicitationId(ref.taskUuid, open), reason: 'The question was answered elsewhere' },
        });
        open = null;
      }
      if (FINAL_STATUSES.has(task.status) || watch.closed) return task;
      if (task.status === 'running' && options.progressToken !== undefined && !options.taskMode) {
        lastProgress = sendProgress(channel, task, options.progressToken, lastProgress);
      }
      if (task.status === 'awaiting_input') {
        if (!options.ask && !options.taskMode) return task;
        if (options.ask && open === null && !asked.has(position)) {
          if (await deps.repo.declined(deps.db.kysely, ref.taskUuid, position)) {
            if (!options.taskMode) return task;
          } else {
            asked.add(position);
            open = position;
            channel.send(question(task, position, options.taskMode));
          }
        } else if (open !== null && (await deps.repo.declined(deps.db.kysely, ref.taskUuid, open))) {
          // Declined: a plain call answers now; task mode goes on waiting without asking again.
          if (!options.taskMode) return task;
          open = null;
        }
      }
      const left = deadline - performance.now();
      if (left <= 0) return task;
      await watch.wait(open === null ? left : Math.min(left, DECLINE_POLL_MS));
    }
  } finally {
    watch.close();
  }
}

function sendProgress(channel: McpChannel, task: TaskRecord, token: string | number, last: number): number {
  const progress = task.progress;
  if (!progress || progress.steps_completed <= last) return last;
  channel.send({
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: {
      progressToken: token,
      progress: progress.steps_completed,
      ...(progress.total_steps > 0 ? { total: progress.total_steps } : {}),
      ...(progress.current_step ? { message: progress.current_step } : {}),
    },
  });
  return progress.steps_completed;
}

function question(task: TaskRecord, position: number, taskMode: boolean) {
  return {
    jsonrpc: '2.0',
    id: elicitationId(task.uuid, position),
    method: 'elicitation/create',
    params: {
      message: task.inputRequest?.message ?? '',
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', title: 'Answer', minLength: 1 } },
        required: ['answer'],
      },
      ...(taskMode ? { _meta: { 'io.modelcontextprotocol/related-task': { taskId: task.uuid } } } : {}),
    },
  };
}
