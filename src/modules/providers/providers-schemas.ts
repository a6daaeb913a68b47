import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';

export const MAX_CREDENTIALS_PER_WORKSPACE = 100;

const Name = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
  description:
    'Letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64 characters; unique per workspace. It is the model prefix of the proxy (`<name>/<model>`).',
});
const ApiKey = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'The provider key. Stored encrypted; never returned (see api_key_hint).',
});
const BaseUrl = Type.String({
  minLength: 1,
  description:
    'Base URL of an OpenAI-compatible server (…/v1): absolute http(s), no user-info, query or fragment, at most 2,048 characters. Default https://api.openai.com/v1. Private addresses are refused unless the operator allows them.',
});

export const CredentialSchema = Type.Object(
  {
    uuid: UuidSchema,
    name: Type.String(),
    provider: Type.Literal('openai'),
    base_url: Type.String({ description: 'Stored without a trailing slash.' }),
    api_key_hint: Type.String({
      description: 'First 3 and last 4 characters of keys of 16 or more characters (sk-…wxyz); "…" for shorter keys.',
    }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
    last_used_at: Type.Union([TimestampSchema, Type.Null()], {
      description: 'Last use by the model proxy or a model agent (refreshed at most once a minute); null until then.',
    }),
  },
  { title: 'ProviderCredential' },
);
export type CredentialView = Static<typeof CredentialSchema>;

export const CreateCredentialBody = StrictObject({
  name: Name,
  provider: Type.Literal('openai', {
    description: 'Any server speaking OpenAI chat completions (OpenAI, vLLM, Ollama, LiteLLM, OpenRouter, …).',
  }),
  api_key: ApiKey,
  base_url: Type.Optional(BaseUrl),
});
export type CreateCredentialInput = Static<typeof CreateCredentialBody>;

export const PatchCredentialBody = StrictObject({
  name: Type.Optional(Name),
  api_key: Type.Optional(ApiKey),
  base_url: Type.Optional(BaseUrl),
});
export type PatchCredentialInput = Static<typeof PatchCredentialBody>;

export const CredentialParams = Type.Object({ uuid: UuidSchema });
export const CredentialListReply = Type.Object({ provider_credentials: Type.Array(CredentialSchema) });
