import { type Static, Type } from '@sinclair/typebox';
import {
  PageQuerySchema,
  PaginationSchema,
  StrictObject,
  StringEnum,
  TimestampSchema,
  UuidSchema,
} from '../../http/common-schemas.js';
import { NAME_RULE } from '../../http/names.js';
import { RetryInput, RetryOutput } from './retry-policy.js';
import type { RuntimeSchemas } from './runtime-schemas.js';

export const AGENT_STATUSES = ['active', 'paused', 'stopped', 'error'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

const Name = Type.String({ minLength: 1, maxLength: 255, description: `1 to 255 characters. ${NAME_RULE}` });
const Description = Type.Union([Type.String({ maxLength: 4000 }), Type.Null()]);
const Concurrency = Type.Integer({ minimum: 1, maximum: 1000, description: 'Tasks it runs at once; default 10.' });
const ConcurrencyPerKey = Type.Union(
  [
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      description:
        'At most this many tasks with the same concurrency_key are held at once (claimed with a live lease, or run by a push runtime); tasks without a key are not capped per key. A lower cap takes no task away; it applies to the next hand-out.',
    }),
    Type.Null(),
  ],
  { description: 'Per-key cap on held tasks; null (the default): none.' },
);
const DefaultTimeout = Type.Integer({
  minimum: 1,
  maximum: 86400,
  description: 'Seconds a task may run before it fails with TIMEOUT; default 3600.',
});

/**
 * The agent's schemas around the `runtime` field's schemas, which the app builds from the
 * registered runtime variants (`runtimeSchemas`, `src/modules/runtimes/adapters.ts`).
 */
export function agentSchemas(runtime: RuntimeSchemas) {
  const AgentSchema = Type.Object(
    {
      uuid: UuidSchema,
      name: Type.String(),
      description: Type.Union([Type.String(), Type.Null()]),
      status: StringEnum(AGENT_STATUSES, {
        description: 'active takes tasks; paused, stopped and error refuse new tasks with 503.',
      }),
      runtime: runtime.response,
      concurrency: Type.Integer(),
      concurrency_per_key: Type.Union([Type.Integer(), Type.Null()], {
        description: 'At most this many tasks of one concurrency_key held at once; null: no per-key cap.',
      }),
      default_timeout_seconds: Type.Integer(),
      retry: RetryOutput,
      created_at: TimestampSchema,
      updated_at: TimestampSchema,
    },
    { title: 'Agent' },
  );
  const CreateAgentBody = StrictObject({
    name: Name,
    description: Type.Optional(Description),
    runtime: Type.Optional(runtime.input),
    concurrency: Type.Optional(Concurrency),
    concurrency_per_key: Type.Optional(ConcurrencyPerKey),
    default_timeout_seconds: Type.Optional(DefaultTimeout),
    retry: Type.Optional(RetryInput),
  });
  const PatchAgentBody = StrictObject({
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('stopped')])),
    runtime: Type.Optional(runtime.input),
    concurrency: Type.Optional(Concurrency),
    concurrency_per_key: Type.Optional(ConcurrencyPerKey),
    default_timeout_seconds: Type.Optional(DefaultTimeout),
    retry: Type.Optional(RetryInput),
  });
  const AgentListReply = Type.Object({ agents: Type.Array(AgentSchema), pagination: PaginationSchema });
  return { AgentSchema, CreateAgentBody, PatchAgentBody, AgentListReply };
}

type AgentSchemas = ReturnType<typeof agentSchemas>;
export type Agent = Static<AgentSchemas['AgentSchema']>;
export type CreateAgentInput = Static<AgentSchemas['CreateAgentBody']>;
export type PatchAgentInput = Static<AgentSchemas['PatchAgentBody']>;

export const AgentParams = Type.Object({ id: UuidSchema });
export const AgentListQuery = PageQuerySchema;
