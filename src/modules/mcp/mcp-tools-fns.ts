import type { AgentRow } from '../agents/agents-repo.js';
import type { TaskView } from '../tasks/tasks-schemas.js';

/** The platform tools, first in every tool list. */
export const PLATFORM_TOOLS = ['get_task', 'reply_to_task', 'cancel_task'] as const;
export type PlatformTool = (typeof PLATFORM_TOOLS)[number];
/** Tools per `tools/list` page. */
export const TOOLS_PAGE = 100;

const STATUSES = ['queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelled'];

/** The task state: every tool's `outputSchema` and the `structuredContent` of its results. */
export const TASK_STATE_SCHEMA = {
  type: 'object',
  properties: {
    task_id: { type: 'string' },
    agent_id: { type: 'string' },
    status: { type: 'string', enum: STATUSES },
    progress: { type: 'object' },
    question: { type: 'string' },
    result: {
      type: 'object',
      properties: { summary: { type: 'string' }, findings: { type: 'array' } },
      required: ['summary', 'findings'],
    },
    error: { type: 'object' },
  },
  required: ['task_id', 'agent_id', 'status'],
} as const;

/** What an MCP client sees of a task. */
export interface TaskState {
  task_id: string;
  agent_id: string;
  status: TaskView['status'];
  progress?: TaskView['progress'];
  question?: string;
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

export function taskState(view: TaskView): TaskState {
  const state: TaskState = { task_id: view.task_id, agent_id: view.agent_uuid, status: view.status };
  if (view.status === 'running' && view.progress) state.progress = view.progress;
  if (view.status === 'awaiting_input' && view.input_request) state.question = view.input_request.message;
  if (view.status === 'completed' && view.result) state.result = { findings: [], ...view.result };
  if (view.status === 'failed' && view.error) state.error = view.error;
  return state;
}

/** A tool's name from an agent's name: `[A-Za-z0-9_-]`, no leading or trailing `_`, at most 64. */
export function baseToolName(agentName: string): string {
  const name = agentName
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  return name === '' ? 'agent' : name;
}

/** Each active agent with its unique tool name, in tool-list order (created_at, then uuid). */
export function agentTools(agents: AgentRow[]): Array<{ name: string; agent: AgentRow }> {
  const active = agents
    .filter((a) => a.status === 'active')
    .sort((a, b) =>
      a.created_at === b.created_at ? (a.uuid < b.uuid ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
    );
  const counts = new Map<string, number>();
  for (const agent of active) {
    const name = baseToolName(agent.name);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const reserved = new Set<string>(PLATFORM_TOOLS);
  return active.map((agent) => {
    const name = baseToolName(agent.name);
    const shared = (counts.get(name) ?? 0) > 1 || reserved.has(name);
    // The last digits: a UUIDv7 begins with its creation time, so agents made within a minute share their first ones.
    return { name: shared ? `${name.slice(0, 55)}_${agent.uuid.replace(/-/g, '').slice(-8)}` : name, agent };
  });
}

const taskIdArg = { type: 'string', description: 'The taskhook task id.' };
const waitArg = (max: number) => ({
  type: 'integer',
  minimum: 0,
  maximum: max,
  default: max,
  description: 'How long to wait for the task to finish or ask a question; 0 answers at once.',
});

/** The `tools/list` entry of an agent. */
export function agentToolDefinition(name: string, agent: AgentRow) {
  return {
    name,
    title: agent.name,
    description: agent.description ? agent.description : `Run a task on the taskhook agent "${agent.name}".`,
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', minLength: 1, maxLength: 100_000, description: 'What the agent should do.' },
        priority: { type: 'integer', minimum: 1, maximum: 10, description: '1 (low) to 10 (high); default 5.' },
        metadata: { type: 'object', description: 'Free-form metadata kept with the task.' },
      },
      required: ['message'],
      additionalProperties: false,
    },
    outputSchema: TASK_STATE_SCHEMA,
    execution: { taskSupport: 'optional' },
    annotations: {
      title: agent.name,
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    _meta: { 'taskhook/agent_id': agent.uuid },
  };
}

/** The `tools/list` entries of the platform tools. */
export function platformToolDefinitions(maxWait: number) {
  return [
    {
      name: 'get_task',
      description: 'Read a taskhook task, waiting until it finishes or asks a question (wait_seconds).',
      inputSchema: {
        type: 'object',
        properties: { task_id: taskIdArg, wait_seconds: waitArg(maxWait) },
        required: ['task_id'],
        additionalProperties: false,
      },
      outputSchema: TASK_STATE_SCHEMA,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    {
      name: 'reply_to_task',
      description: "Answer a taskhook task's question (or add a message to it), then wait as get_task does.",
      inputSchema: {
        type: 'object',
        properties: {
          task_id: taskIdArg,
          message: { type: 'string', minLength: 1, maxLength: 100_000, description: 'Your answer.' },
          wait_seconds: waitArg(maxWait),
        },
        required: ['task_id', 'message'],
        additionalProperties: false,
      },
      outputSchema: TASK_STATE_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    {
      name: 'cancel_task',
      description: 'Cancel a taskhook task that has not finished.',
      inputSchema: {
        type: 'object',
        properties: { task_id: taskIdArg },
        required: ['task_id'],
        additionalProperties: false,
      },
      outputSchema: TASK_STATE_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
  ];
}

/** A CallToolResult carrying the task state; `waiting` answers follow 18.4's wording. */
export function stateResult(state: TaskState, opts: { waited?: number; waiting: boolean }) {
  const json = JSON.stringify(state);
  const text = (t: string, isError = false) => ({
    content: [{ type: 'text', text: t }],
    structuredContent: state,
    isError,
  });
  const id = state.task_id;
  switch (state.status) {
    case 'completed':
      return {
        content: [
          { type: 'text', text: String(state.result?.summary ?? '') },
          { type: 'text', text: json },
        ],
        structuredContent: state,
        isError: false,
      };
    case 'failed':
      return text(`Task ${id} failed: ${state.error?.code}: ${state.error?.message}`, true);
    case 'cancelled':
      return text(`Task ${id} was cancelled.`, opts.waiting);
    case 'awaiting_input':
      return text(`Task ${id} is waiting for your answer: ${state.question ?? ''} Answer with reply_to_task.`);
    default:
      if (opts.waited === undefined) return text(json);
      return text(
        `Task ${id} is still ${state.status} after ${opts.waited} s. Call get_task with task_id ${id} to wait for it again.`,
      );
  }
}

/** A tool error: `<CODE>: <message>`. */
export function toolError(code: string, message: string) {
  return { content: [{ type: 'text', text: `${code}: ${message}` }], isError: true };
}

/** MCP's Task object of a taskhook task (18.6). */
export function mcpTask(view: TaskView, lastUpdatedAt: string) {
  const status =
    view.status === 'queued' || view.status === 'running'
      ? 'working'
      : view.status === 'awaiting_input'
        ? 'input_required'
        : view.status;
  const statusMessage =
    status === 'working'
      ? view.progress?.current_step || undefined
      : status === 'input_required'
        ? view.input_request?.message
        : status === 'failed'
          ? view.error?.message
          : undefined;
  return {
    taskId: view.task_id,
    status,
    ...(statusMessage ? { statusMessage } : {}),
    createdAt: view.created_at,
    lastUpdatedAt,
    ttl: null,
    pollInterval: 1000,
  };
}
