import { Type } from '@sinclair/typebox';
import { NullableTimestamp, StrictObject, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';
import { NAME_RULE } from '../../http/names.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './accounts-fns.js';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'E-mail address (case-insensitive).' });
const NewPassword = Type.String({
  minLength: MIN_PASSWORD_LENGTH,
  maxLength: MAX_PASSWORD_LENGTH,
  description: `At least ${MIN_PASSWORD_LENGTH} characters.`,
});
const AnyPassword = Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH });

export const PublicUserSchema = Type.Object({ uuid: UuidSchema, email: Type.String() });

export const RegisterBody = StrictObject({ email: Email, password: NewPassword });
export const RegisterReply = Type.Object({
  user: Type.Object({ uuid: UuidSchema, email: Type.String(), email_verified: Type.Boolean() }),
});

export const VerifyQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) });
export const VerifyReply = Type.Object({ verified: Type.Literal(true) });

export const LoginBody = StrictObject({ email: Type.String({ minLength: 1, maxLength: 254 }), password: AnyPassword });
export const LoginReply = Type.Object({
  token: Type.String({ description: 'Session JWT (HS256, valid 24 hours).' }),
  user: PublicUserSchema,
});

export const ChangePasswordBody = StrictObject({
  current_password: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_PASSWORD_LENGTH,
      description: 'Required, except for an account that has no password yet (created by an OAuth login).',
    }),
  ),
  new_password: NewPassword,
});

export const UuidParams = Type.Object({ uuid: UuidSchema });

/** The roles a platform key may have (never `owner`). */
export const KeyRoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')], {
  description: "The key acts with the lower of this role and its creator's current role in the workspace.",
});
const CreatorSchema = Type.Union([Type.Object({ uuid: UuidSchema, email: Type.String() }), Type.Null()], {
  description: 'The user who made it (null only if that user has been deleted).',
});
/**
 * A key's model allowlist. Each entry is checked by the service (so a bad one is named `models[<i>]`);
 * the schema takes an array of at most 100 entries, or null.
 */
const ModelsSchema = Type.Union(
  [
    Type.Array(
      Type.Unknown({
        description:
          'A pattern of 1 to 300 characters: a model identifier written exactly, or one ending in a single * that matches any rest (openai/*, route:*, *).',
      }),
      { maxItems: 100 },
    ),
    Type.Null(),
  ],
  {
    description:
      'The models the key may call through the model proxy, compared case-sensitively with `<credential name>/<upstream model>` or `route:<name>`: null (every model) or 0 to 100 distinct patterns ([] allows none).',
  },
);
const KeyName = Type.String({ minLength: 1, maxLength: 255, description: `1 to 255 characters. ${NAME_RULE}` });
export const CreateKeyBody = StrictObject({
  name: KeyName,
  role: Type.Optional(KeyRoleSchema),
  models: Type.Optional(ModelsSchema),
});
export const PatchKeyBody = StrictObject({ name: Type.Optional(KeyName), models: Type.Optional(ModelsSchema) });
export const CreatedKeyReply = Type.Object({
  uuid: UuidSchema,
  name: Type.String(),
  key: Type.String({ description: 'The key (sk_service_…). Shown only in this response.' }),
  created_at: TimestampSchema,
  role: KeyRoleSchema,
  workspace_uuid: UuidSchema,
  models: ModelsSchema,
});
const KeySchema = Type.Object({
  uuid: UuidSchema,
  name: Type.String(),
  prefix: Type.String({ description: 'The first 16 characters of the key.' }),
  created_at: TimestampSchema,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
  role: KeyRoleSchema,
  workspace_uuid: UuidSchema,
  created_by: CreatorSchema,
  models: ModelsSchema,
});

export { KeySchema };
export const KeyListReply = Type.Object({ keys: Type.Array(KeySchema) });

export const CreatedTokenReply = Type.Object({
  uuid: UuidSchema,
  token: Type.String({ description: 'The ingest token (a UUID). Shown only in this response.' }),
  created_at: TimestampSchema,
  workspace_uuid: UuidSchema,
});
const TokenSchema = Type.Object({
  uuid: UuidSchema,
  prefix: Type.String({ description: 'The first 8 characters of the token.' }),
  created_at: TimestampSchema,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
  workspace_uuid: UuidSchema,
  created_by: CreatorSchema,
});
export const TokenListReply = Type.Object({ tokens: Type.Array(TokenSchema) });

export const SigningSecretReply = Type.Object({
  secret: Type.String({ description: 'whsec_… secret that signs task callbacks (Standard Webhooks).' }),
  created_at: TimestampSchema,
});

export const EmailBody = StrictObject({ email: Type.String({ minLength: 1, maxLength: 254 }) });
export const AcceptedReply = StrictObject(
  {},
  { description: 'Accepted, whatever the e-mail (it is never revealed whether an account exists).' },
);
export const ResetPasswordBody = StrictObject({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The token of the reset link.' }),
  new_password: NewPassword,
});
