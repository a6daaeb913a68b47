import { Type } from '@sinclair/typebox';
import { StrictObject, StringEnum, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';
import { NAME_RULE } from '../../http/names.js';
import { ROLES } from '../../lib/principal.js';
import { MAX_NAME_LENGTH } from './workspaces-fns.js';

const RoleSchema = StringEnum(ROLES, { description: 'viewer < member < admin < owner.' });
const NameSchema = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  description: `1 to ${MAX_NAME_LENGTH} characters, not only whitespace; stored as given. ${NAME_RULE}`,
});

export const WorkspaceSchema = Type.Object({
  uuid: UuidSchema,
  name: Type.String(),
  personal: Type.Boolean(),
  role: RoleSchema,
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
});
export const WorkspaceListReply = Type.Object({ workspaces: Type.Array(WorkspaceSchema) });
export const NameBody = StrictObject({ name: NameSchema });
export const WorkspaceParams = Type.Object({ id: UuidSchema });

export const MemberSchema = Type.Object({
  user_uuid: UuidSchema,
  email: Type.String(),
  role: RoleSchema,
  joined_at: TimestampSchema,
});
export const MemberListReply = Type.Object({ members: Type.Array(MemberSchema) });
export const MemberParams = Type.Object({ id: UuidSchema, userUuid: UuidSchema });
export const RoleBody = StrictObject({ role: RoleSchema });

export const InvitationSchema = Type.Object({
  uuid: UuidSchema,
  email: Type.String(),
  role: RoleSchema,
  invited_by: Type.Object({ uuid: UuidSchema, email: Type.String() }),
  created_at: TimestampSchema,
  expires_at: TimestampSchema,
});
export const InvitationListReply = Type.Object({ invitations: Type.Array(InvitationSchema) });
export const InvitationParams = Type.Object({ id: UuidSchema, uuid: UuidSchema });
export const InviteBody = StrictObject({
  email: Type.String({ format: 'email', maxLength: 254, description: 'Compared case-insensitively; stored as given.' }),
  role: RoleSchema,
});
export const AcceptBody = StrictObject({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The token of the invitation link.' }),
});
