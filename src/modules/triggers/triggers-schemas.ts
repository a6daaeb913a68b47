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
import { VERIFICATION_TYPES, VerificationInputSchema, VerificationPatchSchema } from './verification-schemas.js';

export const MAX_TEMPLATE_CHARS = 10_000;
export const MAX_TRIGGERS_PER_AGENT = 1000;

const Name = Type.String({ minLength: 1, maxLength: 255, description: `1 to 255 characters. ${NAME_RULE}` });
const Template = Type.String({
  minLength: 1,
  maxLength: MAX_TEMPLATE_CHARS,
  description:
    'The task message; {{payload.a.b}} is replaced by the value at that path of the delivered JSON ({{payload}} for all of it, numeric segments index arrays). Strings as they are, numbers and booleans as JSON text, objects and arrays as compact JSON; a missing path or null renders empty and is listed in the task metadata.template_missing.',
});

export const MAX_KEY_TEMPLATE_CHARS = 1000;
const KeyTemplate = Type.Union(
  [
    Type.String({
      maxLength: MAX_KEY_TEMPLATE_CHARS,
      description:
        "Template of the concurrency_key of each task it creates, with the message template's {{payload.a.b}} placeholders; rendered per delivery, cut to 255 characters; an empty result gives no key. Missing paths are not listed in template_missing.",
    }),
    Type.Null(),
  ],
  { description: 'Concurrency key template; null (the default): the tasks have no key.' },
);

export const TriggerSchema = Type.Object(
  {
    uuid: UuidSchema,
    agent_uuid: UuidSchema,
    name: Type.String(),
    message_template: Type.String(),
    concurrency_key: Type.Union([Type.String(), Type.Null()], {
      description: 'Template of the concurrency_key of the tasks it creates; null: none.',
    }),
    enabled: Type.Boolean(),
    verification: Type.Object(
      {
        type: StringEnum(VERIFICATION_TYPES, { description: 'The signature scheme deliveries must satisfy.' }),
        tolerance_seconds: Type.Optional(
          Type.Integer({
            description: 'standard_webhooks, stripe and slack only: accepted clock skew of the signed timestamp.',
          }),
        ),
      },
      { description: 'How deliveries are verified, without any secret.' },
    ),
    webhook_url: Type.String({ description: '{base_url}/v1/webhooks/triggers/<uuid>: where external systems POST.' }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { title: 'Trigger' },
);
export type TriggerView = Static<typeof TriggerSchema>;

export const TriggerWithSecretSchema = Type.Composite(
  [
    TriggerSchema,
    Type.Object({
      webhook_secret: Type.String({
        description:
          'The new secret: whs_… (whsec_… for standard_webhooks). Send it as X-Webhook-Secret, or sign the body with it (X-Hub-Signature-256, or the Standard Webhooks headers). Shown only here.',
      }),
    }),
  ],
  { title: 'TriggerWithSecret' },
);

export const CreatedTriggerSchema = Type.Composite(
  [
    TriggerSchema,
    Type.Object({
      webhook_secret: Type.Optional(
        Type.String({
          description:
            'Present only when the service generated the secret (verification secret, or github / standard_webhooks without a secret): whs_… (whsec_… for standard_webhooks). Shown only here; a supplied secret is never returned.',
        }),
      ),
    }),
  ],
  { title: 'CreatedTrigger' },
);

export const CreateTriggerBody = StrictObject({
  name: Name,
  message_template: Template,
  concurrency_key: Type.Optional(KeyTemplate),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true.' })),
  verification: Type.Optional(VerificationInputSchema),
});
export type CreateTriggerInput = Static<typeof CreateTriggerBody>;

export const PatchTriggerBody = StrictObject({
  name: Type.Optional(Name),
  message_template: Type.Optional(Template),
  concurrency_key: Type.Optional(KeyTemplate),
  enabled: Type.Optional(Type.Boolean()),
  verification: Type.Optional(VerificationPatchSchema),
});
export type PatchTriggerInput = Static<typeof PatchTriggerBody>;

export const AgentParams = Type.Object({ id: UuidSchema });
export const TriggerParams = Type.Object({ id: UuidSchema, triggerId: UuidSchema });
export const WebhookParams = Type.Object({ trigger_uuid: UuidSchema });

export const TriggerListQuery = PageQuerySchema;
export const TriggerListReply = Type.Object({ triggers: Type.Array(TriggerSchema), pagination: PaginationSchema });

export const DeliverySchema = Type.Object({
  delivery_id: Type.String({ description: 'X-GitHub-Delivery, webhook-id or Idempotency-Key, or a generated UUID.' }),
  received_at: TimestampSchema,
  status_code: Type.Integer({ description: 'What the delivery was answered.' }),
  task_id: Type.Union([UuidSchema, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it was refused; null on success.' }),
});
export const DeliveryListReply = Type.Object({ deliveries: Type.Array(DeliverySchema), pagination: PaginationSchema });

export const WebhookAccepted = Type.Object({
  task_id: UuidSchema,
  status: Type.Literal('queued'),
  trigger_uuid: UuidSchema,
  delivery_id: Type.String(),
  poll_url: Type.String(),
});
export type WebhookAccepted = Static<typeof WebhookAccepted>;

export const SlackChallengeReply = Type.Object(
  { challenge: Type.String({ description: 'The challenge Slack sent, echoed.' }) },
  { description: "A slack trigger's answer to Slack's URL verification (no task is created)." },
);
export type SlackChallengeReply = Static<typeof SlackChallengeReply>;
