import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, UuidSchema } from '../../../http/common-schemas.js';
import { MAX_RPM, MAX_TPM } from './limits-fns.js';

const Rpm = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_RPM }), Type.Null()], {
  description: 'Requests per UTC clock minute (1–1,000,000); null is no limit.',
});
const Tpm = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_TPM }), Type.Null()], {
  description: 'Tokens (input + output of each call) per UTC clock minute (1–1,000,000,000); null is no limit.',
});
const Count = (description: string) => Type.Integer({ minimum: 0, description });
const Remaining = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description });

export const RateLimitSchema = Type.Object(
  {
    scope: Type.Union([Type.Literal('platform_key'), Type.Literal('agent')], {
      description:
        'Whose model calls are limited: those a platform key authenticated, or those attributed to an agent.',
    }),
    id: Type.String({ pattern: UuidSchema.pattern, description: 'The platform key’s or agent’s uuid.' }),
    limits: Type.Object({ rpm: Rpm, tpm: Tpm }),
    window: Type.Object(
      {
        start: Type.String({ description: 'Start of the current UTC minute.' }),
        end: Type.String({ description: 'End of the current minute, exclusive.' }),
        requests: Count('Calls admitted in the window.'),
        tokens: Count('Tokens the window’s calls have added so far.'),
        remaining_requests: Remaining('max(0, rpm − requests); null without an rpm.'),
        remaining_tokens: Remaining('max(0, tpm − tokens); null without a tpm.'),
      },
      { description: 'The current window’s counts (0 for a scope without traffic).' },
    ),
  },
  { title: 'RateLimit', description: 'Requests- and tokens-per-minute limits of a platform key or an agent.' },
);
export type RateLimitView = Static<typeof RateLimitSchema>;

export const RateLimitListReply = Type.Object({
  rate_limits: Type.Array(RateLimitSchema, {
    description:
      'Every agent, then every platform key (revoked ones included), with at least one limit, each group by ascending uuid.',
  }),
});

export const RateLimitPatch = StrictObject({ rpm: Type.Optional(Rpm), tpm: Type.Optional(Tpm) });
export const AgentLimitParams = Type.Object({ agentId: UuidSchema });
export const KeyLimitParams = Type.Object({ keyUuid: UuidSchema });
