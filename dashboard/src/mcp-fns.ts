// Imports nothing, so the server's test suite can load it as it is.

/** A workspace role (the same union as `Role` in types.ts). */
type Role = 'viewer' | 'member' | 'admin' | 'owner';

/** The roles a consent may give an MCP client: `viewer` always, `member` when the user holds it there. */
export type GrantRole = 'viewer' | 'member';

/** A client's registration, as the API names it. */
export type Registration = 'metadata_document' | 'dynamic';

/** The roles the user may give a client in a workspace where they hold `held` (never above it). */
export function grantableRoles(held: Role): GrantRole[] {
  return held === 'viewer' ? ['viewer'] : ['viewer', 'member'];
}

/** The role the consent preselects: the highest grantable one that is not above `wanted`. */
export function defaultGrantRole(held: Role, wanted: GrantRole = 'member'): GrantRole {
  const roles = grantableRoles(held);
  return roles.includes(wanted) ? wanted : 'viewer';
}

/** The host name of a redirect URI, shown so the user sees where the browser goes next. */
export function redirectHost(uri: string): string {
  try {
    return new URL(uri).hostname || uri;
  } catch {
    return uri;
  }
}

/** How the client came to be known, in words. */
export function registrationLabel(registration: Registration): string {
  return registration === 'metadata_document' ? 'Client ID Metadata Document' : 'Registered dynamically';
}

/** The `request_id` of a consent page's query, or null when it is missing or not of the server's form. */
export function consentRequestId(search: string): string | null {
  const id = new URLSearchParams(search).get('request_id');
  return id && /^[A-Za-z0-9_-]{22,128}$/.test(id) ? id : null;
}

/** Only an absolute http(s) address is followed after a consent answer (never `javascript:` and the like). */
export function safeRedirect(target: string): string | null {
  try {
    const url = new URL(target);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}
