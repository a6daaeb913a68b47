import { Type } from '@sinclair/typebox';
import { StrictObject, StringEnum, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';
import { AUDIT_ACTIONS } from './audit-actions.js';

export const AUDIT_PAGE_DEFAULT = 50;
export const AUDIT_PAGE_MAX = 100;

export const AuditLogParams = Type.Object({ id: UuidSchema });

export const AuditLogQuery = StrictObject({
  limit: Type.Integer({
    minimum: 1,
    maximum: AUDIT_PAGE_MAX,
    default: AUDIT_PAGE_DEFAULT,
    description: 'Entries per page, 1 to 100.',
  }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'next_cursor of the previous page.' })),
  action: Type.Optional(StringEnum(AUDIT_ACTIONS, { description: 'Only entries of this action.' })),
});

const Actor = Type.Union([
  Type.Object({ type: Type.Literal('user'), uuid: UuidSchema, email: Type.String() }),
  Type.Object({ type: Type.Literal('key'), uuid: UuidSchema, name: Type.String() }),
  Type.Object({
    type: Type.Literal('mcp_client'),
    client_id: Type.String(),
    client_name: Type.Union([Type.String(), Type.Null()]),
  }),
]);

export const AuditEntrySchema = Type.Object(
  {
    id: UuidSchema,
    at: TimestampSchema,
    actor: Actor,
    action: StringEnum(AUDIT_ACTIONS),
    target: Type.Object({ type: Type.String(), uuid: UuidSchema }),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The keys listed for the action; never a secret.',
    }),
    ip: Type.Union([Type.String(), Type.Null()], { description: 'Client address; null from the CLI.' }),
    request_id: Type.Union([Type.String(), Type.Null()], {
      description:
        "The server's own id for the request (a UUID it made, never a value the client chose); the response's " +
        'X-Request-Id when the client sent none it accepted. Null for entries written by the CLI.',
    }),
    client_request_id: Type.Union([Type.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$' }), Type.Null()], {
      description:
        'The X-Request-Id the client sent, when it was accepted (1 to 128 characters of A-Za-z0-9._:-, the value ' +
        'the response echoed); null when none was sent, when the server replaced it, and for CLI entries.',
    }),
  },
  { title: 'AuditEntry' },
);

export const AuditLogReply = Type.Object({
  entries: Type.Array(AuditEntrySchema),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Null on the last page.' }),
});
