import { type Static, Type } from '@sinclair/typebox';
import {
  PageQuerySchema,
  PaginationSchema,
  StrictObject,
  StringEnum,
  TimestampSchema,
  UuidSchema,
} from '../../http/common-schemas.js';

export const AGENT_STATUSES = ['active', 'paused', 'stopped', 'error'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** How an agent carries out tasks. Only the pull worker exists today; push runtimes join this union. */
export const RuntimeSchema = Type.Union(
  [
    StrictObject(
      { type: Type.Literal('worker', { description: 'External workers pull tasks (POST /agent/:id/tasks/claim).' }) },
      { title: 'WorkerRuntime' },
    ),
  ],
  { description: 'How the agent carries out tasks; default {"type": "worker"}.' },
);
export type Runtime = Static<typeof RuntimeSchema>;

const Name = Type.String({ minLength: 1, maxLength: 255 });
const Description = Type.Union([Type.String({ maxLength: 4000 }), Type.Null()]);
const Concurrency = Type.Integer({ minimum: 1, maximum: 1000, description: 'Tasks it runs at once; default 10.' });
const DefaultTimeout = Type.Integer({
  minimum: 1,
  maximum: 86400,
  description: 'Seconds a task may run before it fails with TIMEOUT; default 3600.',
});

export const AgentSchema = Type.Object(
  {
    uuid: UuidSchema,
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    status: StringEnum(AGENT_STATUSES, {
      description: 'active takes tasks; paused, stopped and error refuse new tasks with 503.',
    }),
    runtime: RuntimeSchema,
    concurrency: Type.Integer(),
    default_timeout_seconds: Type.Integer(),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { title: 'Agent' },
);
export type Agent = Static<typeof AgentSchema>;

export const CreateAgentBody = StrictObject({
  name: Name,
  description: Type.Optional(Description),
  runtime: Type.Optional(RuntimeSchema),
  concurrency: Type.Optional(Concurrency),
  default_timeout_seconds: Type.Optional(DefaultTimeout),
});
export type CreateAgentInput = Static<typeof CreateAgentBody>;

export const PatchAgentBody = StrictObject({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('stopped')])),
  runtime: Type.Optional(RuntimeSchema),
  concurrency: Type.Optional(Concurrency),
  default_timeout_seconds: Type.Optional(DefaultTimeout),
});
export type PatchAgentInput = Static<typeof PatchAgentBody>;

export const AgentParams = Type.Object({ id: UuidSchema });
export const AgentListQuery = PageQuerySchema;
export const AgentListReply = Type.Object({ agents: Type.Array(AgentSchema), pagination: PaginationSchema });
