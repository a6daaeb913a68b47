import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../lib/principal.js';

/** The protocol versions served; the first is answered to a client asking for another. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'] as const;

/** What a stateless session remembers: who, which protocol, and whether the client can be asked. */
export interface McpSession {
  userUuid: string;
  workspaceUuid: string;
  protocolVersion: string;
  elicitation: boolean;
}

/** The key session ids are signed with, derived from TASKHOOK_ENCRYPTION_KEY. */
export function sessionKey(encryptionKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', encryptionKey, 'taskhook', 'mcp-session-v1', 32));
}

/** A self-contained session id: `v1.<payload>.<signature>`, base64url, well under 512 characters. */
export function signSession(key: Buffer, session: McpSession): string {
  const payload = Buffer.from(
    JSON.stringify([session.userUuid, session.workspaceUuid, session.protocolVersion, session.elicitation ? 1 : 0]),
  ).toString('base64url');
  return `v1.${payload}.${mac(key, payload)}`;
}

/** The session a signed id names, or null when this server did not sign it. */
export function verifySession(key: Buffer, id: string): McpSession | null {
  const [version, payload, signature, ...rest] = id.split('.');
  if (version !== 'v1' || !payload || !signature || rest.length > 0) return null;
  const expected = Buffer.from(mac(key, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    const [userUuid, workspaceUuid, protocolVersion, elicitation] = JSON.parse(
      Buffer.from(payload, 'base64url').toString('utf8'),
    );
    if (typeof userUuid !== 'string' || typeof workspaceUuid !== 'string' || typeof protocolVersion !== 'string') {
      return null;
    }
    return { userUuid, workspaceUuid, protocolVersion, elicitation: elicitation === 1 };
  } catch {
    return null;
  }
}

/** Form-mode elicitation declared: `{}` or with `form`; `url` alone does not count. */
export function declaresElicitation(capabilities: unknown): boolean {
  if (!capabilities || typeof capabilities !== 'object') return false;
  const elicitation = (capabilities as { elicitation?: unknown }).elicitation;
  if (!elicitation || typeof elicitation !== 'object') return false;
  const keys = Object.keys(elicitation);
  return keys.length === 0 || keys.includes('form');
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

export const isRpcId = (id: unknown): id is string | number => typeof id === 'string' || typeof id === 'number';

/**
 * Names one waiting request across instances: the caller (user, workspace, credential), the MCP
 * session it came in (clients number their requests per session) and its JSON-RPC id; hashed, so
 * the hint stays short whatever the id.
 */
export function cancelKeyOf(
  sessionHeader: string | string[] | undefined,
  principal: Pick<Principal, 'userUuid' | 'workspaceUuid' | 'credentialUuid'>,
  id: string | number | null,
): string {
  const session = sessionHeader;
  return createHash('sha256')
    .update(
      JSON.stringify([
        principal.userUuid,
        principal.workspaceUuid,
        principal.credentialUuid,
        typeof session === 'string' ? session : '',
        id,
      ]),
    )
    .digest('base64url');
}
