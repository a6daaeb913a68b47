import type { Role } from '../lib/principal.js';

/**
 * What a route requires of the caller's role in the workspace the request acts in, decided by
 * method and path alone, before any lookup (docs/workspaces.md has the same table in prose):
 *
 * - a role: the least role that may call it;
 * - `session`: any signed-in user, acting in no particular workspace (their personal one);
 * - `token`: an ingest token, which has no role and only writes telemetry into its workspace.
 *
 * `/a2a/:agentId` (and its HTTP+JSON paths) is `viewer` here and then decided by its JSON-RPC method, or
 * the operation the path names (`A2A_METHOD_ROLES`).
 * Every route that takes a credential must have a line: the app refuses to start otherwise.
 */
export type Permission = Role | 'session' | 'token';

const read = 'viewer' as const;
const work = 'member' as const;
const manage = 'admin' as const;
const own = 'owner' as const;

export const PERMISSIONS: Readonly<Record<string, Permission>> = {
  // Agents
  'POST /agent': manage,
  'GET /agent/list': read,
  'GET /agent/:id': read,
  'PATCH /agent/:id': manage,
  'DELETE /agent/:id': manage,
  // Tasks
  'POST /agent/request/:id': work,
  'GET /agent/:id/tasks': read,
  'GET /agent/:id/tasks/events': read,
  'GET /agent/:id/task/:taskId': read,
  'GET /agent/:id/task/:taskId/events': read,
  'POST /agent/:id/task/:taskId/message': work,
  'POST /agent/:id/task/:taskId/cancel': work,
  'POST /agent/:id/task/:taskId/rerun': work,
  'POST /agent/:id/tasks/bulk': work,
  'GET /agent/:id/task/:taskId/deliveries': read,
  'POST /agent/:id/task/:taskId/deliveries/:deliveryId/retry': work,
  // The worker protocol
  'POST /agent/:id/tasks/claim': work,
  'POST /agent/:id/tasks/complete': work,
  'POST /agent/:id/task/:taskId/progress': work,
  'POST /agent/:id/task/:taskId/input_request': work,
  'POST /agent/:id/task/:taskId/complete': work,
  'POST /agent/:id/task/:taskId/fail': work,
  'POST /agent/:id/task/:taskId/release': work,
  // Triggers
  'POST /v1/agent/:id/triggers': manage,
  'GET /v1/agent/:id/triggers': read,
  'GET /v1/agent/:id/triggers/:triggerId': read,
  'PATCH /v1/agent/:id/triggers/:triggerId': manage,
  'DELETE /v1/agent/:id/triggers/:triggerId': manage,
  'POST /v1/agent/:id/triggers/:triggerId/rotate_secret': manage,
  'GET /v1/agent/:id/triggers/:triggerId/deliveries': read,
  // A2A
  'GET /a2a/:agentId/.well-known/agent-card.json': read,
  'POST /a2a/:agentId': read,
  // A2A HTTP+JSON: the role of the path's operation; `POST …/tasks/:taskId` (`:cancel` or `:subscribe`)
  // and the fallback are viewer here, then decided by the operation the path names (A2A_METHOD_ROLES)
  'POST /a2a/:agentId/message::send': work,
  'POST /a2a/:agentId/message::stream': work,
  'GET /a2a/:agentId/tasks': read,
  'GET /a2a/:agentId/tasks/:taskId': read,
  'POST /a2a/:agentId/tasks/:taskId': read,
  'POST /a2a/:agentId/tasks/:taskId/pushNotificationConfigs': work,
  'GET /a2a/:agentId/tasks/:taskId/pushNotificationConfigs': read,
  'GET /a2a/:agentId/tasks/:taskId/pushNotificationConfigs/:configId': read,
  'DELETE /a2a/:agentId/tasks/:taskId/pushNotificationConfigs/:configId': work,
  'GET /a2a/:agentId/extendedAgentCard': read,
  'GET /a2a/:agentId/*': read,
  'POST /a2a/:agentId/*': read,
  'PUT /a2a/:agentId/*': read,
  'PATCH /a2a/:agentId/*': read,
  'DELETE /a2a/:agentId/*': read,
  // Keys, tokens, the signing secret
  'POST /auth/platform_keys': manage,
  'GET /auth/platform_keys': manage,
  'PATCH /auth/platform_keys/:uuid': manage,
  'DELETE /auth/platform_keys/:uuid': manage,
  'POST /auth/generate_ingest_token': manage,
  'GET /auth/ingest_tokens': manage,
  'DELETE /auth/ingest_tokens/:uuid': manage,
  'GET /auth/webhook_signing_secret': manage,
  'POST /auth/webhook_signing_secret/rotate': manage,
  'POST /auth/change_password': 'session',
  // MCP OAuth: consent and connected clients (the user's own, in any workspace)
  'GET /oauth/authorization_requests/:id': 'session',
  'POST /oauth/authorization_requests/:id/approve': 'session',
  'POST /oauth/authorization_requests/:id/deny': 'session',
  'GET /auth/mcp_grants': 'session',
  'DELETE /auth/mcp_grants/:uuid': 'session',
  // Provider credentials and the model proxy
  'POST /user/provider_credentials': manage,
  'GET /user/provider_credentials': read,
  'GET /user/provider_credentials/:uuid': read,
  'PATCH /user/provider_credentials/:uuid': manage,
  'DELETE /user/provider_credentials/:uuid': manage,
  'POST /spotlight/v1/chat/completions': work,
  'POST /spotlight/v1/responses': work,
  'GET /spotlight/v1/models': work,
  'GET /spotlight/calls': read,
  'GET /spotlight/calls/:id': read,
  'GET /spotlight/usage': read,
  'GET /spotlight/budgets': read,
  'GET /spotlight/budgets/account': read,
  'PATCH /spotlight/budgets/account': manage,
  'GET /spotlight/budgets/agents/:agentId': read,
  'PATCH /spotlight/budgets/agents/:agentId': manage,
  'GET /spotlight/budgets/platform_keys/:keyUuid': read,
  'PATCH /spotlight/budgets/platform_keys/:keyUuid': manage,
  'GET /spotlight/rate_limits': read,
  'GET /spotlight/rate_limits/platform_keys/:keyUuid': read,
  'PATCH /spotlight/rate_limits/platform_keys/:keyUuid': manage,
  'GET /spotlight/rate_limits/agents/:agentId': read,
  'PATCH /spotlight/rate_limits/agents/:agentId': manage,
  'GET /spotlight/budgets/tasks/:taskId': read,
  'POST /spotlight/routes': manage,
  'GET /spotlight/routes': read,
  'GET /spotlight/routes/:uuid': read,
  'PATCH /spotlight/routes/:uuid': manage,
  'DELETE /spotlight/routes/:uuid': manage,
  // Telemetry
  'POST /telemetry/ingest_http/v1/traces': 'token',
  'POST /telemetry/ingest_http/v1/logs': 'token',
  'GET /telemetry/fetch_traces': read,
  'GET /telemetry/fetch_trace/:traceId': read,
  'GET /telemetry/fetch_logs': read,
  'GET /telemetry/fetch_usage': read,
  // Workspaces
  'POST /workspaces': 'session',
  'GET /workspaces': 'session',
  'POST /invitations/accept': 'session',
  'GET /workspaces/:id': read,
  'PATCH /workspaces/:id': manage,
  'DELETE /workspaces/:id': own,
  'POST /workspaces/:id/leave': read,
  'GET /workspaces/:id/members': read,
  'PATCH /workspaces/:id/members/:userUuid': manage,
  'DELETE /workspaces/:id/members/:userUuid': manage,
  'POST /workspaces/:id/invitations': manage,
  'GET /workspaces/:id/invitations': manage,
  'DELETE /workspaces/:id/invitations/:uuid': manage,
  'GET /workspaces/:id/audit_log': manage,
  // Schedules
  'POST /v1/agent/:id/schedules': manage,
  'GET /v1/agent/:id/schedules': read,
  'POST /v1/agent/:id/schedules/preview': read,
  'GET /v1/agent/:id/schedules/:scheduleId': read,
  'PATCH /v1/agent/:id/schedules/:scheduleId': manage,
  'DELETE /v1/agent/:id/schedules/:scheduleId': manage,
  'POST /v1/agent/:id/schedules/:scheduleId/run': work,
  'GET /v1/agent/:id/schedules/:scheduleId/runs': read,
  // MCP (per-method roles in mcp/)
  'POST /mcp': read,
  'GET /mcp': read,
  'DELETE /mcp': read,
};

/** The role each A2A JSON-RPC method needs on `POST /a2a/:agentId`; unknown methods need `viewer` (they fail anyway). */
export const A2A_METHOD_ROLES: Readonly<Record<string, Role>> = {
  SendMessage: work,
  SendStreamingMessage: work,
  CancelTask: work,
  GetTask: read,
  ListTasks: read,
  SubscribeToTask: read,
  GetExtendedAgentCard: read,
  CreateTaskPushNotificationConfig: work,
  DeleteTaskPushNotificationConfig: work,
  GetTaskPushNotificationConfig: read,
  ListTaskPushNotificationConfigs: read,
};

/** The permission line of a route (`method` upper case, `url` as registered), or undefined. */
export function permissionOf(method: string, url: string): Permission | undefined {
  return PERMISSIONS[`${method} ${url}`];
}

/**
 * Where a request's workspace comes from: `/workspaces/:id/…` names it in the path; the
 * workspace collection, invitations, the password and ingest routes ignore the header; every
 * other route reads `X-Taskhook-Workspace`.
 */
export function workspaceSourceOf(url: string, permission: Permission): 'path' | 'header' | 'fixed' {
  if (url.startsWith('/workspaces/:id')) return 'path';
  if (permission === 'session' || permission === 'token') return 'fixed';
  return 'header';
}

/** The message of a 403 FORBIDDEN. */
export const forbiddenMessage = (role: Role) => `This operation requires the ${role} role in this workspace`;
