import { describe, expect, it } from 'vitest';
import {
  fromStoredEvent,
  needsConversation,
  toStoredEvent,
} from '../../../src/modules/tasks/events/task-events-fns.js';
import type { TaskView } from '../../../src/modules/tasks/tasks-schemas.js';

const at = '2026-11-22T10:00:00.000Z';
const conversation = {
  message: 'review it',
  messages: [
    { role: 'user' as const, content: 'review it', created_at: at },
    { role: 'agent' as const, content: 'which branch?', created_at: at },
    { role: 'user' as const, content: 'main', created_at: at },
  ],
};
const view: TaskView = {
  task_id: '0193a000-0000-7000-8000-000000000001',
  status: 'awaiting_input',
  created_at: at,
  agent_uuid: '0193a000-0000-7000-8000-000000000002',
  message: 'review it',
  messages: conversation.messages.slice(0, 2),
  priority: 5,
  metadata: { a: 1 },
  concurrency_key: null,
  attempt: 1,
  max_attempts: 3,
  last_error: null,
  available_at: null,
  rerun_of: null,
  parent_task_id: null,
  started_at: at,
  progress: { current_step: '', steps_completed: 0, total_steps: 0 },
  input_request: { message: 'which branch?', requested_at: at },
};

describe('task event storage form', () => {
  it('stores the body without the conversation, only its length then', () => {
    const stored = toStoredEvent(view);
    expect(stored).not.toHaveProperty('messages');
    expect(stored).not.toHaveProperty('message');
    expect(stored.messages_count).toBe(2);
    expect(needsConversation(stored)).toBe(true);
  });

  it('gives back the same body, in the same field order, from a conversation that has grown since', () => {
    const back = fromStoredEvent(JSON.parse(JSON.stringify(toStoredEvent(view))), conversation);
    expect(back).toEqual(view);
    expect(JSON.stringify(back)).toBe(JSON.stringify(view));
  });

  it('returns an event stored with its conversation (before this form) as it was', () => {
    expect(needsConversation(view)).toBe(false);
    expect(fromStoredEvent(view, conversation)).toBe(view);
  });
});
