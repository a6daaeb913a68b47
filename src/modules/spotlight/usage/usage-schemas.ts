import { type Static, Type } from '@sinclair/typebox';
import { PaginationSchema, TimestampSchema, UuidSchema } from '../../../http/common-schemas.js';

const ApiSchema = Type.Union(
  ['chat.completions', 'responses', 'anthropic.messages'].map((a) => Type.Literal(a)),
  {
    description:
      'The endpoint kind: chat.completions (/spotlight/v1/chat/completions and openai runtimes), responses (/spotlight/v1/responses) or anthropic.messages (/spotlight/anthropic/v1/messages).',
  },
);

const Nullable = <T extends ReturnType<typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);

const CallErrorSchema = Type.Object({
  code: Type.Union(
    [
      'upstream_error',
      'upstream_unreachable',
      'upstream_timeout',
      'client_closed',
      'budget_exceeded',
      'model_not_priced',
    ].map((c) => Type.Literal(c)),
  ),
  message: Type.String(),
});

const AttemptSchema = Type.Object(
  {
    provider_credential_uuid: UuidSchema,
    upstream_model: Type.String(),
    status_code: Type.Union([Type.Integer(), Type.Null()], {
      description: "The upstream's HTTP status; null when none came (timeout, unreachable).",
    }),
    error: Type.Union([CallErrorSchema, Type.Null()]),
    latency_ms: Type.Integer(),
  },
  { title: 'ModelCallAttempt' },
);

export const CallSchema = Type.Object(
  {
    id: UuidSchema,
    created_at: TimestampSchema,
    source: Type.Union([Type.Literal('api'), Type.Literal('runtime')]),
    api: ApiSchema,
    model: Type.String({ description: 'The model as the caller sent it.' }),
    upstream_model: Type.String(),
    response_model: Type.Union([Type.String(), Type.Null()]),
    provider_credential_uuid: UuidSchema,
    provider_credential_name: Type.Union([Type.String(), Type.Null()], {
      description: 'Null once the credential is deleted.',
    }),
    stream: Type.Boolean(),
    status_code: Type.Integer({
      description: 'What the caller got (200 for a stream that started; 499 when the caller left first).',
    }),
    error: Type.Union([CallErrorSchema, Type.Null()]),
    latency_ms: Type.Integer(),
    time_to_first_token_ms: Nullable(Type.Integer()),
    input_tokens: Nullable(
      Type.Integer({ description: "The upstream's usage, or the estimate when usage_estimated." }),
    ),
    output_tokens: Nullable(
      Type.Integer({ description: "The upstream's usage, or the estimate when usage_estimated." }),
    ),
    cache_read_tokens: Nullable(
      Type.Integer({
        description:
          "Input tokens served from the provider's prompt cache (included in input_tokens); null when not reported.",
      }),
    ),
    cache_write_tokens: Nullable(
      Type.Integer({
        description:
          "Input tokens written to the provider's prompt cache (Anthropic; included in input_tokens); null when not reported.",
      }),
    ),
    cost_usd: Type.Union([Type.Number(), Type.Null()], {
      description:
        "From the price table (shipped, or the operator's); null when the model has no price or no usage came.",
    }),
    agent_uuid: Type.Union([UuidSchema, Type.Null()]),
    task_id: Type.Union([UuidSchema, Type.Null()]),
    platform_key_uuid: Type.Union([UuidSchema, Type.Null()], {
      description: 'The platform key that authenticated the request; null for a session JWT and for source "runtime".',
    }),
    route: Type.Union([Type.Object({ uuid: UuidSchema, name: Type.String() }), Type.Null()], {
      description: 'The fallback route the call went through (its name as at the call); null for a plain call.',
    }),
    attempts: Type.Array(AttemptSchema, {
      description:
        'The upstream exchanges in order: one for a plain call that went upstream, one per target tried for a route, none for a budget refusal, an unpriced model refused under a budget (model_not_priced), or a cache hit.',
    }),
    cache_hit: Type.Boolean({ description: 'Answered from the response cache (cost 0, nothing went upstream).' }),
    usage_estimated: Type.Boolean({
      description:
        'True when the upstream answered 2xx without a usage object (a stream closed by the caller or broken before its usage chunk, an answer without usage): input_tokens is then ceil(P / 4), P the Unicode code points of the request messages (string contents and the text of content parts), and output_tokens ceil(C / 4), C the code points of generated text received (content, refusal, tool call arguments); cost_usd follows from them. False on every other record.',
    }),
  },
  { title: 'ModelCall' },
);
export type CallView = Static<typeof CallSchema>;

export const CallListQuery = Type.Object({
  task_id: Type.Optional(UuidSchema),
  agent_uuid: Type.Optional(UuidSchema),
  provider_credential_uuid: Type.Optional(UuidSchema),
  platform_key_uuid: Type.Optional(UuidSchema),
  route_uuid: Type.Optional(UuidSchema),
  api: Type.Optional(ApiSchema),
  page: Type.Integer({ minimum: 1, maximum: 10_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
});
export const CallListReply = Type.Object({ calls: Type.Array(CallSchema), pagination: PaginationSchema });
export const CallParams = Type.Object({ id: UuidSchema });

const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A UTC date, YYYY-MM-DD.' });
export const UsageQuery = Type.Object({
  from: Type.Optional(Day),
  to: Type.Optional(Day),
  api: Type.Optional(ApiSchema),
});

const Totals = {
  calls: Type.Integer(),
  errors: Type.Integer(),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  cache_hits: Type.Integer({ description: 'Calls answered from the response cache (counted in calls too).' }),
  cache_read_tokens: Type.Integer({ description: "Input tokens served from the provider's prompt cache." }),
  cache_write_tokens: Type.Integer({ description: "Input tokens written to the provider's prompt cache." }),
};
export const UsageReply = Type.Object({
  from: Day,
  to: Day,
  usage: Type.Array(
    Type.Object({
      date: Day,
      provider_credential_uuid: UuidSchema,
      provider_credential_name: Type.Union([Type.String(), Type.Null()]),
      model: Type.String({ description: 'The upstream model.' }),
      api: ApiSchema,
      ...Totals,
    }),
  ),
  totals: Type.Object(Totals),
});
export type UsageView = Static<typeof UsageReply>;
