import { Type } from '@sinclair/typebox';
import { NullableTimestamp, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';

const Nullable = (schema: ReturnType<typeof Type.String>) => Type.Union([schema, Type.Null()]);

/** An OAuth error answer (RFC 6749 §5.2), not section 2's envelope. */
export const OAuthErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  { title: 'OAuthError' },
);

export const ProtectedResourceSchema = Type.Object(
  {
    resource: Type.String(),
    authorization_servers: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    bearer_methods_supported: Type.Array(Type.String()),
    resource_name: Type.String(),
    resource_documentation: Type.String(),
  },
  { title: 'ProtectedResourceMetadata', description: 'RFC 9728 protected resource metadata of /mcp.' },
);

export const AuthorizationServerSchema = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    registration_endpoint: Type.Optional(Type.String()),
    revocation_endpoint: Type.String(),
    scopes_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    response_modes_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    client_id_metadata_document_supported: Type.Boolean(),
    service_documentation: Type.String(),
  },
  { title: 'AuthorizationServerMetadata', description: 'RFC 8414 authorization server metadata.' },
);

export const TokenReplySchema = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer(),
    refresh_token: Type.Optional(Type.String()),
    scope: Type.String(),
  },
  { title: 'TokenReply' },
);

export const RegistrationReplySchema = Type.Object(
  {
    client_id: Type.String(),
    client_id_issued_at: Type.Integer(),
    redirect_uris: Type.Array(Type.String()),
    token_endpoint_auth_method: Type.String(),
    grant_types: Type.Array(Type.String()),
    response_types: Type.Array(Type.String()),
    scope: Type.String(),
    client_name: Type.Optional(Type.String()),
    client_uri: Type.Optional(Type.String()),
    logo_uri: Type.Optional(Type.String()),
    application_type: Type.Optional(Type.String()),
    client_secret: Type.Optional(Type.String()),
    client_secret_expires_at: Type.Optional(Type.Integer()),
  },
  { title: 'ClientRegistration' },
);

const Registration = Type.Union([Type.Literal('metadata_document'), Type.Literal('dynamic')]);

export const AuthorizationRequestSchema = Type.Object(
  {
    request_id: Type.String(),
    client: Type.Object({
      client_id: Type.String(),
      client_name: Nullable(Type.String()),
      client_uri: Nullable(Type.String()),
      logo_uri: Nullable(Type.String()),
      registration: Registration,
    }),
    redirect_uri: Type.String(),
    scope: Type.String(),
    resource: Type.String(),
    expires_at: TimestampSchema,
  },
  { title: 'AuthorizationRequest' },
);

export const RequestParams = Type.Object({ id: Type.String({ maxLength: 128 }) });
export const GrantParams = Type.Object({ uuid: Type.String({ maxLength: 64 }) });

export const ApproveBody = Type.Unknown({
  description:
    '`{workspace_uuid, role}`: the workspace the client acts in and its role there (`viewer` or `member`, no higher than yours).',
});

export const RedirectReplySchema = Type.Object({ redirect_to: Type.String() }, { title: 'ConsentRedirect' });

export const GrantListSchema = Type.Object(
  {
    grants: Type.Array(
      Type.Object({
        uuid: UuidSchema,
        client: Type.Object({
          client_id: Type.String(),
          client_name: Nullable(Type.String()),
          client_uri: Nullable(Type.String()),
          registration: Registration,
        }),
        workspace: Type.Object({ uuid: UuidSchema, name: Nullable(Type.String()) }),
        role: Type.String(),
        scope: Type.String(),
        resource: Type.String(),
        created_at: TimestampSchema,
        last_used_at: NullableTimestamp,
        revoked_at: NullableTimestamp,
      }),
    ),
  },
  { title: 'McpGrantList' },
);
