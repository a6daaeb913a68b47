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
    provider_credential_uuid: Type.Optional(
      Type.String({
        pattern: UuidSchema.pattern,
        description:
          "One of the owner's provider credentials (its base_url and key are used); with model, unless route_uuid is given.",
      }),
    ),
    model: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Upstream model name, e.g. gpt-4o-mini.' }),
    ),
    route_uuid: Type.Optional(
      Type.String({
        pattern: UuidSchema.pattern,
        description:
          'Instead of provider_credential_uuid and model: one of the fallback routes (/spotlight/routes); each run is one call through it.',
      }),
    ),
    system_prompt: Type.Optional(Type.String({ maxLength: 100_000 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_output_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    allow_input_requests: Type.Optional(
      Type.Boolean({ description: 'Offer the model a request_input tool that makes the task awaiting_input.' }),
    ),
  },
  { title: 'OpenAiRuntime' },
);

/** Header names refused in a runtime's `headers`: the service sets these itself. */
export const FORBIDDEN_HEADER_NAMES = [
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'a2a-version',
] as const;

const anyCase = (word: string) => [...word].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
/** An RFC 9110 token, other than the forbidden names and any `webhook-*` name (in any case). */
export const HEADER_NAME_PATTERN = `^(?!(?:${FORBIDDEN_HEADER_NAMES.map(anyCase).join('|')})$)(?!${anyCase('webhook-')})[!#$%&'*+.^_\`|~0-9A-Za-z-]+$`;
export const MAX_RUNTIME_HEADERS = 20;
/** What every response shows instead of a header value; sent back on PATCH it keeps the stored value. */
export const HEADER_MASK = '********';

const RuntimeHeaders = Type.Record(Type.String({ pattern: HEADER_NAME_PATTERN }), Type.String({ maxLength: 4096 }), {
  additionalProperties: false,
  maxProperties: MAX_RUNTIME_HEADERS,
  description:
    'Sent with every request to the agent (e.g. its credential). At most 20; names are RFC 9110 tokens other than host, content-length, content-type, connection, transfer-encoding, a2a-version and webhook-*; values up to 4,096 characters. Stored encrypted and shown as "********"; "********" on PATCH keeps the stored value.',
});
const urlLimits = { minLength: 1, maxLength: 2048 };
const RuntimeUrl = Type.String({
  ...urlLimits,
  description: 'Absolute http(s) URL without credentials, query or fragment; private addresses are refused.',
});

/** An agent that is an HTTP endpoint: the service POSTs each task to it, signed like callbacks. */
export const HttpRuntimeSchema = StrictObject(
  {
    type: Type.Literal('http', { description: 'The service POSTs each task to url (a task.run webhook).' }),
    url: RuntimeUrl,
    headers: Type.Optional(RuntimeHeaders),
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 300, description: 'Time allowed for the answer; default 30.' }),
    ),
    lease_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600,
        description: 'The lease the agent holds after answering 202 (progress extends it by as much); default 60.',
      }),
    ),
  },
  { title: 'HttpRuntime' },
);
export type HttpRuntime = Static<typeof HttpRuntimeSchema>;

/** An agent that is a remote A2A agent: the service is its A2A client. */
export const A2aRuntimeSchema = StrictObject(
  {
    type: Type.Literal('a2a', { description: 'The service drives a remote A2A 1.0 agent.' }),
    agent_card_url: Type.String({ ...urlLimits, description: "The remote agent card's full URL." }),
    headers: Type.Optional(RuntimeHeaders),
  },
  { title: 'A2aRuntime' },
);
export type A2aRuntime = Static<typeof A2aRuntimeSchema>;

const WorkerRuntimeSchema = StrictObject(
  { type: Type.Literal('worker', { description: 'External workers pull tasks (POST /agent/:id/tasks/claim).' }) },
  { title: 'WorkerRuntime' },
);
const RUNTIME_VARIANTS = [WorkerRuntimeSchema, OpenAiRuntimeSchema, HttpRuntimeSchema, A2aRuntimeSchema] as const;
const RUNTIME_DESCRIPTION =
  'How the agent carries out tasks: pulled by workers (default {"type": "worker"}), or pushed by the service to a model (openai), an HTTP endpoint (http) or a remote A2A agent (a2a).';

/** An agent's runtime as answered (header values masked). */
export const RuntimeSchema = Type.Union([...RUNTIME_VARIANTS], { description: RUNTIME_DESCRIPTION });

/**
 * The runtime in request bodies: a `oneOf` with a discriminator on `type`, so a bad field is
 * reported against the variant the client chose (`runtime.model`) and an unknown type against
 * `runtime`. Only request validation knows the discriminator; responses use the plain union.
 */
export const RuntimeInputSchema = Type.Unsafe<Static<typeof RuntimeSchema>>({
  // Ajv's discriminator checks neither: anything but an object with a type would pass.
  type: 'object',
  required: ['type'],
  oneOf: RUNTIME_VARIANTS,
  discriminator: { propertyName: 'type' },
  description: RUNTIME_DESCRIPTION,
});
export type Runtime = Static<typeof RuntimeSchema>;

const Name = Type.String({ minLength: 1, maxLength: 255 });
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
    concurrency_per_key: Type.Union([Type.Integer(), Type.Null()], {
      description: 'At most this many tasks of one concurrency_key held at once; null: no per-key cap.',
    }),
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
  runtime: Type.Optional(RuntimeInputSchema),
  concurrency: Type.Optional(Concurrency),
  concurrency_per_key: Type.Optional(ConcurrencyPerKey),
  default_timeout_seconds: Type.Optional(DefaultTimeout),
});
export type CreateAgentInput = Static<typeof CreateAgentBody>;

export const PatchAgentBody = StrictObject({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('stopped')])),
  runtime: Type.Optional(RuntimeInputSchema),
  concurrency: Type.Optional(Concurrency),
  concurrency_per_key: Type.Optional(ConcurrencyPerKey),
  default_timeout_seconds: Type.Optional(DefaultTimeout),
});
export type PatchAgentInput = Static<typeof PatchAgentBody>;

export const AgentParams = Type.Object({ id: UuidSchema });
export const AgentListQuery = PageQuerySchema;
export const AgentListReply = Type.Object({ agents: Type.Array(AgentSchema), pagination: PaginationSchema });
