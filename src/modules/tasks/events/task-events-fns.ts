import { type ConversationMessage, TaskBody, type TaskView } from '../tasks-schemas.js';

/**
 * What `task_events` stores for one change: the task body without its conversation (`message`
 * and `messages`), plus how many messages the conversation had then. The conversation only ever
 * grows at its end, so the task row's conversation cut at that length is the conversation of the
 * event: storage per task grows with the conversation once, not with a copy of it per change.
 */
export type StoredTaskEvent = Omit<TaskView, 'message' | 'messages'> & { messages_count: number };

/** The stored form of an event whose reader will see `view`. */
export function toStoredEvent(view: TaskView): StoredTaskEvent {
  const { message: _message, messages, ...rest } = view;
  return { ...rest, messages_count: messages.length };
}

/** The fields of a task body in the order of its schema (the order the GET body has them). */
const FIELD_ORDER = Object.keys(TaskBody.properties) as Array<keyof TaskView>;

/**
 * The task body an event stood for, from its stored form and the task's conversation now (its
 * original `message` and the `messages` list, which can only have grown since). An event stored
 * before events dropped the conversation (it still holds `messages`) is returned as it was stored.
 */
export function fromStoredEvent(
  stored: StoredTaskEvent | TaskView,
  conversation: { message: string; messages: readonly ConversationMessage[] },
): TaskView {
  // Events stored before tasks had concurrency keys lack the field: those tasks had none.
  if ('messages' in stored)
    return 'concurrency_key' in stored ? stored : { ...(stored as TaskView), concurrency_key: null };
  const { messages_count: count, ...rest } = stored;
  const fields: Record<string, unknown> = {
    ...rest,
    concurrency_key: rest.concurrency_key ?? null,
    message: conversation.message,
    messages: conversation.messages.slice(0, count),
  };
  const view: Record<string, unknown> = {};
  for (const key of FIELD_ORDER) if (fields[key] !== undefined) view[key] = fields[key];
  return view as TaskView;
}

/** The stored event holds the conversation itself (it has to be joined with the task's). */
export function needsConversation(stored: StoredTaskEvent | TaskView): boolean {
  return !('messages' in stored);
}
