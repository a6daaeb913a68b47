import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, UuidSchema } from '../../../http/common-schemas.js';

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

/** The stored runtime of such an agent: one credential with `model`, or instead of both a route. */
export type OpenAiRuntime = Static<typeof OpenAiRuntimeSchema>;
