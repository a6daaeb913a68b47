import { jsonTooDeep } from '../../lib/json-depth.js';

/** Tool arguments that break the input schema: a tool error naming the field, nothing done. */
export class ToolArgumentError extends Error {}

type Args = Record<string, unknown>;

function object(raw: unknown): Args {
  if (raw === undefined) return {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ToolArgumentError('arguments must be an object');
  return raw as Args;
}

function onlyKnown(args: Args, known: string[]) {
  const extra = Object.keys(args).find((k) => !known.includes(k));
  if (extra !== undefined) throw new ToolArgumentError(`${extra.slice(0, 100)} is not an argument of this tool`);
}

function text(args: Args, field: string, required: boolean): string | undefined {
  const value = args[field];
  if (value === undefined) {
    if (required) throw new ToolArgumentError(`${field} is required`);
    return undefined;
  }
  if (typeof value !== 'string') throw new ToolArgumentError(`${field} must be a string`);
  if (value.length < 1 || value.length > 100_000) {
    throw new ToolArgumentError(`${field} must be 1 to 100000 characters`);
  }
  return value;
}

function integer(args: Args, field: string, min: number, max: number): number | undefined {
  const value = args[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ToolArgumentError(`${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** An agent tool's arguments as a submit body. */
export function agentToolArgs(raw: unknown) {
  const args = object(raw);
  onlyKnown(args, ['message', 'priority', 'metadata']);
  const message = text(args, 'message', true) as string;
  const priority = integer(args, 'priority', 1, 10);
  const metadata = args.metadata;
  if (metadata !== undefined) {
    if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) {
      throw new ToolArgumentError('metadata must be an object');
    }
    if (Buffer.byteLength(JSON.stringify(metadata)) > 16 * 1024) {
      throw new ToolArgumentError('metadata must be at most 16384 bytes as JSON');
    }
    if (jsonTooDeep(JSON.stringify(metadata))) throw new ToolArgumentError('metadata is nested too deep');
  }
  return {
    message,
    ...(priority !== undefined ? { priority } : {}),
    ...(metadata !== undefined ? { metadata: metadata as Record<string, unknown> } : {}),
  };
}

/** A platform tool's arguments: `task_id`, and `message` / `wait_seconds` where the tool takes them. */
export function platformToolArgs(tool: 'get_task' | 'reply_to_task' | 'cancel_task', raw: unknown, maxWait: number) {
  const args = object(raw);
  const known = { get_task: ['task_id', 'wait_seconds'], reply_to_task: ['task_id', 'message', 'wait_seconds'] };
  onlyKnown(args, tool === 'cancel_task' ? ['task_id'] : known[tool]);
  const taskId = args.task_id;
  if (taskId === undefined) throw new ToolArgumentError('task_id is required');
  if (typeof taskId !== 'string') throw new ToolArgumentError('task_id must be a string');
  const message = tool === 'reply_to_task' ? text(args, 'message', true) : undefined;
  const waitSeconds = tool === 'cancel_task' ? 0 : (integer(args, 'wait_seconds', 0, maxWait) ?? maxWait);
  return { taskId, message, waitSeconds };
}

/** `_meta["taskhook/idempotency_key"]`, when given. @throws ToolArgumentError when not a string of 1–255. */
export function idempotencyKeyOf(meta: unknown): string | undefined {
  if (!meta || typeof meta !== 'object') return undefined;
  const key = (meta as Args)['taskhook/idempotency_key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
    throw new ToolArgumentError('_meta.taskhook/idempotency_key must be a string of 1 to 255 characters');
  }
  return key;
}
