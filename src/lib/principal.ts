/** A member's role in a workspace; each includes everything of the ones before it. */
export const ROLES = ['viewer', 'member', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];
/** A platform key's own role: never `owner`. */
export type KeyRole = Exclude<Role, 'owner'>;

/** Does `held` include `needed`? */
export const roleAtLeast = (held: Role, needed: Role) => ROLES.indexOf(held) >= ROLES.indexOf(needed);
/** The lower of two roles (a key acts with the lower of its own and its creator's). */
export const lowerRole = (a: Role, b: Role): Role => (ROLES.indexOf(a) <= ROLES.indexOf(b) ? a : b);
export const isRole = (value: unknown): value is Role => ROLES.includes(value as Role);

/** Who is making a request, once their credential has been checked. */
export interface Principal {
  /** The person: the session's user, or the user who made the key or token. */
  userUuid: string;
  email: string;
  /**
   * The workspace the request acts in: a key's or token's own, or for a session its user's
   * personal workspace (whose uuid is the user's) unless `X-Taskhook-Workspace` names another.
   */
  workspaceUuid: string;
  /** The role the request acts with there (for a key: the lower of its own and its creator's). */
  role: Role;
  /** The platform key's name, for the audit log; null otherwise. */
  keyName: string | null;
  /** Which credential kind authenticated the request. */
  via: 'jwt' | 'platform_key' | 'ingest_token' | 'mcp_token';
  /** The platform key or ingest token used, or the grant of an MCP OAuth access token; null for a session JWT. */
  credentialUuid: string | null;
  agentsEnabled: boolean;
  /**
   * The model allowlist of the platform key (null or absent: every model; sessions and other
   * credentials have none).
   */
  keyModels?: readonly string[] | null;
  /** The user's token version when the credential was checked; a password change raises it. */
  tokenVersion: number;
}

/**
 * What a route requires: nothing, a user (JWT or platform key), a user session (JWT), an ingest
 * token, or for `/mcp` a user or an MCP OAuth access token.
 */
export type AuthMode = 'none' | 'user' | 'session' | 'ingest' | 'mcp';

/** For connections that outlive their request (event streams): is the credential they opened with still good? */
export interface CredentialCheck {
  /**
   * False once the request's credential is revoked or expired, the account is disabled or lost the
   * agents feature, the credential no longer reaches `was`'s workspace or holds less than `needed`
   * there (default viewer), or (for a session JWT only) the user's password changed since `was` was
   * authenticated.
   * @throws only for trouble other than the credential (e.g. the database is unreachable).
   */
  stillValid(headers: Record<string, string | string[] | undefined>, was: Principal, needed?: Role): Promise<boolean>;
  /** Hears each user whose credentials may have changed, as soon as this instance learns of it. */
  onChange(listener: (userUuid: string) => void): () => void;
}

/** Who did a management action, as the audit log names them. */
export type AuditActor =
  | { type: 'user'; uuid: string; email: string }
  | { type: 'key'; uuid: string; name: string }
  | { type: 'mcp_client'; client_id: string; client_name: string | null };

/** What a management action needs to know to write its audit entry: where, who, and from which request. */
export interface Acting {
  workspaceUuid: string;
  actor: AuditActor;
  /** The client address (with TASKHOOK_TRUST_PROXY); null from the CLI. */
  ip: string | null;
  /** The server's own id for the request (a UUID it made, never the client's); null from the CLI. */
  requestId: string | null;
  /** The X-Request-Id the client sent, when it was accepted (and echoed); null otherwise and from the CLI. */
  clientRequestId: string | null;
}

/** Where a request comes from, as the audit log records it: the part of `Acting` a request alone decides. */
export type RequestOrigin = Pick<Acting, 'ip' | 'requestId' | 'clientRequestId'>;

/** The actor a principal acts as: its platform key, or its user. */
export function actorOf(principal: Principal): AuditActor {
  return principal.via === 'platform_key' && principal.credentialUuid
    ? { type: 'key', uuid: principal.credentialUuid, name: principal.keyName ?? '' }
    : { type: 'user', uuid: principal.userUuid, email: principal.email };
}
