import { Type } from '@sinclair/typebox';
import { StrictObject, StringEnum } from '../../http/common-schemas.js';
import { PublicUserSchema } from '../accounts/accounts-schemas.js';
import { PROVIDERS } from './oauth-fns.js';

export const ProviderParams = Type.Object({
  provider: Type.String({
    description: `The identity provider: ${PROVIDERS.join(' or ')}. Any other, or one that is not configured, is a 404.`,
    examples: ['google'],
  }),
});

export const ProvidersReply = Type.Object({
  providers: Type.Array(StringEnum(PROVIDERS), { description: 'The configured providers, in this order.' }),
});

// Other query parameters are ignored (not a strict object): they are the provider's business.
export const StartQuery = Type.Object({
  mode: Type.Optional(
    StringEnum(['redirect', 'json'] as const, {
      description:
        '`json`: answer 200 with the URL; `redirect`: answer 302. Absent: JSON when Accept names application/json, else 302.',
    }),
  ),
});

export const StartReply = Type.Object({
  authorization_url: Type.String({ description: "The provider's authorization URL, to send the browser to." }),
  state: Type.String({ description: 'The login attempt; a front-end keeps it to check the callback against.' }),
});

const State = Type.String({
  minLength: 1,
  maxLength: 512,
  description: 'The state of step 1, as the provider returns it.',
});
const Code = Type.String({ minLength: 1, maxLength: 2048, description: "The provider's authorization code." });
const ErrorCode = Type.String({
  minLength: 1,
  maxLength: 256,
  description: "The provider's error code (e.g. access_denied).",
});
const ErrorText = Type.String({ maxLength: 2048 });

const callbackFields = {
  state: State,
  code: Type.Optional(Code),
  error: Type.Optional(ErrorCode),
  error_description: Type.Optional(ErrorText),
  error_uri: Type.Optional(ErrorText),
};

export const CallbackBody = StrictObject(callbackFields, {
  description: '`state` and exactly one of `code` or `error` (with optional error_description and error_uri).',
});

// The provider's redirect as it arrives: Google adds scope, authuser, prompt, hd; RFC 9207 adds iss.
export const CallbackQuery = Type.Object(callbackFields);

export const CallbackReply = Type.Object({
  token: Type.String({ description: 'Session JWT, exactly as POST /auth/login issues it.' }),
  user: PublicUserSchema,
  created: Type.Boolean({ description: 'True only when this login created the account.' }),
});
