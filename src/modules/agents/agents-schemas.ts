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

/** An agent that is a model: the service runs each task with one chat completion through the model proxy. */
export const OpenAiRuntimeSchema = StrictObject(
  {
    type: Type.Literal('openai', { description: 'The service runs each task with an OpenAI-compatible model.' }),
    provider_credential_uuid: Type.String({
      pattern: UuidSchema.pattern,
      description: "One of the owner's provider credentials (its base_url and key are used).",
    }),
    model: Type.String({ minLength: 1, maxLength: 256, description: 'Upstream model name, e.g. gpt-4o-mini.' }),
    system_prompt: Type.Optional(Type.String({ maxLength: 100_000 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_output_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    allow_input_requests: Type.Optional(
      Type.Boolean({ description: 'Offer the model a request_input tool that makes the task awaiting_input.' }),
    ),
  },
  { title: 'OpenAiRuntime' },
);

/** How an agent carries out tasks: pulled by external workers, or pushed by the service to a model. */
export const RuntimeSchema = Type.Union(
  [
    StrictObject(
      { type: Type.Literal('worker', { description: 'External workers pull tasks (POST /agent/:id/tasks/claim).' }) },
      { title: 'WorkerRuntime' },
    ),
    OpenAiRuntimeSchema,
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
