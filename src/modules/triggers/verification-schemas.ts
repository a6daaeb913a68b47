import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { StrictObject } from '../../http/common-schemas.js';
import { DEFAULT_TOLERANCE_SECONDS, VERIFICATION_TYPES } from './signature-schemes-fns.js';

export { VERIFICATION_TYPES };

const Tolerance = Type.Integer({
  minimum: 1,
  maximum: 86_400,
  description: `Seconds the signed timestamp may differ from the service's clock (1 to 86400, default ${DEFAULT_TOLERANCE_SECONDS}).`,
});

const GithubSecret = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Your own secret (1 to 255 characters); generated (whs_…) when left out. Never returned.',
});
const StandardSecret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/=]+$',
  maxLength: 94,
  description: 'whsec_ + base64 of 24 to 64 bytes; generated (whsec_ + 32 random bytes) when left out. Never returned.',
});
const StripeSecret = Type.String({
  pattern: '^whsec_\\S+$',
  minLength: 7,
  maxLength: 255,
  description: 'The endpoint signing secret Stripe shows (whsec_…, no whitespace). Never returned.',
});
const SlackSecret = Type.String({
  pattern: '^\\S+$',
  minLength: 1,
  maxLength: 255,
  description: "The Slack app's signing secret (no whitespace). Never returned.",
});

/** Each scheme's object; `required` says whether stripe's and slack's secrets must be present (create). */
function variants(required: boolean) {
  const needed = <T extends TSchema>(s: T) => (required ? s : Type.Optional(s));
  return [
    StrictObject(
      { type: Type.Literal('secret', { description: 'X-Webhook-Secret or X-Hub-Signature-256 (the default).' }) },
      { title: 'SecretVerification' },
    ),
    StrictObject(
      {
        type: Type.Literal('github', { description: 'X-Hub-Signature-256 only (X-Webhook-Secret is refused).' }),
        secret: Type.Optional(GithubSecret),
      },
      { title: 'GithubVerification' },
    ),
    StrictObject(
      {
        type: Type.Literal('standard_webhooks', {
          description: 'webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks, v1 signatures).',
        }),
        secret: Type.Optional(StandardSecret),
        tolerance_seconds: Type.Optional(Tolerance),
      },
      { title: 'StandardWebhooksVerification' },
    ),
    StrictObject(
      {
        type: Type.Literal('stripe', { description: 'Stripe-Signature (t=…,v1=…).' }),
        secret: needed(StripeSecret),
        tolerance_seconds: Type.Optional(Tolerance),
      },
      { title: 'StripeVerification' },
    ),
    StrictObject(
      {
        type: Type.Literal('slack', { description: 'X-Slack-Signature and X-Slack-Request-Timestamp.' }),
        signing_secret: needed(SlackSecret),
        tolerance_seconds: Type.Optional(Tolerance),
      },
      { title: 'SlackVerification' },
    ),
  ] as const;
}

const CREATE_VARIANTS = variants(true);
const PATCH_VARIANTS = variants(false);
const Union = Type.Union([...PATCH_VARIANTS]);
export type VerificationInput = Static<typeof Union>;

/**
 * A `oneOf` with a discriminator on `type` (as an agent's runtime), so a bad field is reported
 * against the scheme the client chose (`verification.secret`) and an unknown type against `verification`.
 */
function discriminated(of: readonly TSchema[], description: string) {
  return Type.Unsafe<VerificationInput>({
    // Ajv's discriminator checks neither: anything but an object with a type would pass.
    type: 'object',
    required: ['type'],
    oneOf: of,
    discriminator: { propertyName: 'type' },
    description,
  });
}

export const VerificationInputSchema = discriminated(
  CREATE_VARIANTS,
  'How deliveries prove they come from the sender: a signature scheme and its secret. Default {"type": "secret"}. Supplied secrets are stored encrypted and never returned.',
);
export const VerificationPatchSchema = discriminated(
  PATCH_VARIANTS,
  'Changes tolerance_seconds, or replaces the secret (secret / signing_secret; left out: kept, a new one applies at once). The type must stay the same.',
);
