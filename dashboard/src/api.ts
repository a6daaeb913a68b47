import { chosenWorkspace, clearSession, getToken } from './session';
import type {
  Agent,
  AgentInput,
  AuditEntry,
  AuthorizationRequest,
  Budget,
  CallbackDelivery,
  IngestToken,
  Invitation,
  McpGrant,
  Member,
  ModelRoute,
  ModelUsage,
  Occurrence,
  Page,
  PlatformKey,
  ProviderCredential,
  RateLimit,
  Role,
  RouteInput,
  Schedule,
  ScheduleInput,
  ScheduleRun,
  Span,
  Task,
  TaskStatus,
  TraceSummary,
  Trigger,
  TriggerDelivery,
  UsageGroup,
  Workspace,
} from './types';

/** An error answer of the API, with the message it gave (shown to the user as it is). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

let unauthorized: () => void = () => undefined;

/** What to do when the session is refused (expired, password changed): back to the login screen. */
export function onUnauthorized(handler: () => void): void {
  unauthorized = handler;
}

/** Turns an error body (flat `{error}` or the `{success:false,error:{code,message}}` envelope) into an ApiError. */
export function toApiError(status: number, body: unknown): ApiError {
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error === 'string') return new ApiError(status, undefined, error);
  if (error && typeof error === 'object') {
    const e = error as { code?: string; message?: string; details?: { field?: string; reason?: string } };
    const detail = e.details?.field ? ` (${e.details.field}: ${e.details.reason ?? 'invalid'})` : '';
    return new ApiError(status, e.code, `${e.message ?? `HTTP ${status}`}${detail}`);
  }
  return new ApiError(status, undefined, `The server answered HTTP ${status}`);
}

/**
 * The headers of every signed-in call and stream: the session's Authorization, and the workspace
 * chosen in the switcher (without one the server acts in the personal workspace).
 */
export function authHeaders(): Record<string, string> {
  const token = getToken();
  if (!token) return {};
  const workspace = chosenWorkspace();
  return { authorization: `Bearer ${token}`, ...(workspace ? { 'x-taskhook-workspace': workspace } : {}) };
}

/** Reports a refused session (once it was sent) so the app can go back to the login screen. */
export function sessionRefused(): void {
  clearSession();
  unauthorized();
}

async function call<T>(method: string, path: string, body?: unknown, opts: { anonymous?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...(opts.anonymous ? {} : authHeaders()) };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, undefined, 'The server cannot be reached: is taskhook running?');
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.anonymous) sessionRefused();
    throw toApiError(res.status, json);
  }
  return json as T;
}

const id = encodeURIComponent;

function query(params: Record<string, string | number | undefined>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== '');
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}` : '';
}

/** The public taskhook API, as the dashboard uses it (same origin, session JWT). */
export const api = {
  login: (email: string, password: string) =>
    call<{ token: string; user: { uuid: string; email: string } }>(
      'POST',
      '/auth/login',
      { email, password },
      { anonymous: true },
    ),
  register: (email: string, password: string) =>
    call<{ user: { uuid: string; email: string } }>('POST', '/auth/register', { email, password }, { anonymous: true }),
  resetPassword: (token: string, newPassword: string) =>
    call<null>('POST', '/auth/reset_password', { token, new_password: newPassword }, { anonymous: true }),
  oauthProviders: () => call<{ providers: string[] }>('GET', '/auth/oauth/providers', undefined, { anonymous: true }),
  oauthStart: (provider: string) =>
    call<{ authorization_url: string; state: string }>('GET', `/auth/oauth/${id(provider)}?mode=json`, undefined, {
      anonymous: true,
    }),
  oauthFinish: (provider: string, body: { code?: string; error?: string; error_description?: string; state: string }) =>
    call<{ token: string; user: { uuid: string; email: string } }>(
      'POST',
      `/auth/oauth/${id(provider)}/callback`,
      body,
      { anonymous: true },
    ),

  agents: () => call<{ agents: Agent[]; pagination: Page }>('GET', '/agent/list?limit=100'),
  agent: (agentId: string) => call<Agent>('GET', `/agent/${id(agentId)}`),
  createAgent: (input: AgentInput) => call<Agent>('POST', '/agent', input),
  updateAgent: (agentId: string, input: Partial<AgentInput> & { status?: Agent['status'] }) =>
    call<Agent>('PATCH', `/agent/${id(agentId)}`, input),
  deleteAgent: (agentId: string) => call<void>('DELETE', `/agent/${id(agentId)}`),

  tasks: (agentId: string, status?: TaskStatus | '') =>
    call<{ tasks: Task[]; pagination: Page }>('GET', `/agent/${id(agentId)}/tasks${query({ status, limit: 50 })}`),
  task: (agentId: string, taskId: string) => call<Task>('GET', `/agent/${id(agentId)}/task/${id(taskId)}`),
  submit: (agentId: string, input: { message: string; priority: number }) =>
    call<{ task_id: string }>('POST', `/agent/request/${id(agentId)}`, input),
  reply: (agentId: string, taskId: string, message: string) =>
    call<{ status: TaskStatus }>('POST', `/agent/${id(agentId)}/task/${id(taskId)}/message`, { message }),
  cancel: (agentId: string, taskId: string) =>
    call<{ status: TaskStatus }>('POST', `/agent/${id(agentId)}/task/${id(taskId)}/cancel`),
  rerun: (agentId: string, taskId: string) =>
    call<{ task_id: string; rerun_of: string }>('POST', `/agent/${id(agentId)}/task/${id(taskId)}/rerun`, {}),
  callbackDeliveries: (agentId: string, taskId: string) =>
    call<{ deliveries: CallbackDelivery[] }>('GET', `/agent/${id(agentId)}/task/${id(taskId)}/deliveries`),
  retryCallback: (agentId: string, taskId: string, deliveryId: string) =>
    call<CallbackDelivery>('POST', `/agent/${id(agentId)}/task/${id(taskId)}/deliveries/${id(deliveryId)}/retry`),

  triggers: (agentId: string) =>
    call<{ triggers: Trigger[]; pagination: Page }>('GET', `/v1/agent/${id(agentId)}/triggers?limit=100`),
  createTrigger: (
    agentId: string,
    input: { name: string; message_template: string; verification?: Record<string, unknown> },
  ) => call<Trigger>('POST', `/v1/agent/${id(agentId)}/triggers`, input),
  updateTrigger: (agentId: string, triggerId: string, input: { enabled?: boolean; name?: string }) =>
    call<Trigger>('PATCH', `/v1/agent/${id(agentId)}/triggers/${id(triggerId)}`, input),
  deleteTrigger: (agentId: string, triggerId: string) =>
    call<void>('DELETE', `/v1/agent/${id(agentId)}/triggers/${id(triggerId)}`),
  rotateTrigger: (agentId: string, triggerId: string) =>
    call<Trigger>('POST', `/v1/agent/${id(agentId)}/triggers/${id(triggerId)}/rotate_secret`),
  triggerDeliveries: (agentId: string, triggerId: string) =>
    call<{ deliveries: TriggerDelivery[]; pagination: Page }>(
      'GET',
      `/v1/agent/${id(agentId)}/triggers/${id(triggerId)}/deliveries?limit=50`,
    ),

  schedules: (agentId: string) =>
    call<{ schedules: Schedule[]; pagination: Page }>('GET', `/v1/agent/${id(agentId)}/schedules?limit=100`),
  createSchedule: (agentId: string, input: ScheduleInput) =>
    call<Schedule>('POST', `/v1/agent/${id(agentId)}/schedules`, input),
  updateSchedule: (agentId: string, scheduleId: string, input: { enabled?: boolean }) =>
    call<Schedule>('PATCH', `/v1/agent/${id(agentId)}/schedules/${id(scheduleId)}`, input),
  deleteSchedule: (agentId: string, scheduleId: string) =>
    call<void>('DELETE', `/v1/agent/${id(agentId)}/schedules/${id(scheduleId)}`),
  scheduleRuns: (agentId: string, scheduleId: string) =>
    call<{ runs: ScheduleRun[]; pagination: Page }>(
      'GET',
      `/v1/agent/${id(agentId)}/schedules/${id(scheduleId)}/runs?limit=20`,
    ),
  previewSchedule: (agentId: string, input: { cron: string; timezone?: string; count?: number }) =>
    call<{ occurrences: Occurrence[] }>('POST', `/v1/agent/${id(agentId)}/schedules/preview`, input),

  telemetryAvailable: () => call<unknown>('GET', '/telemetry/fetch_traces?limit=1'),
  traces: (filters: Record<string, string | undefined>, cursor?: string) =>
    call<{ traces: TraceSummary[]; next_cursor: string | null }>(
      'GET',
      `/telemetry/fetch_traces${query({ ...filters, cursor, limit: 50 })}`,
    ),
  trace: (traceId: string) => call<{ trace_id: string; spans: Span[] }>('GET', `/telemetry/fetch_trace/${id(traceId)}`),
  usage: (from: string) =>
    call<{ groups: UsageGroup[]; totals: { total_tokens: number } }>(
      'GET',
      `/telemetry/fetch_usage${query({ from, group_by: 'day,model' })}`,
    ),

  providersAvailable: () => call<unknown>('GET', '/user/provider_credentials'),
  providers: () => call<{ provider_credentials: ProviderCredential[] }>('GET', '/user/provider_credentials'),
  createProvider: (input: { name: string; provider: 'openai'; api_key: string; base_url?: string }) =>
    call<ProviderCredential>('POST', '/user/provider_credentials', input),
  updateProvider: (uuid: string, input: { name?: string; api_key?: string; base_url?: string }) =>
    call<ProviderCredential>('PATCH', `/user/provider_credentials/${id(uuid)}`, input),
  deleteProvider: (uuid: string) => call<void>('DELETE', `/user/provider_credentials/${id(uuid)}`),

  budgets: () => call<{ budgets: Budget[] }>('GET', '/spotlight/budgets'),
  /** `path`: `account`, `agents/<uuid>` or `platform_keys/<uuid>`; null removes a limit. */
  setBudget: (path: string, limits: Record<string, number | null>) =>
    call<Budget>('PATCH', `/spotlight/budgets/${path}`, limits),
  routes: () => call<{ routes: ModelRoute[] }>('GET', '/spotlight/routes'),
  createRoute: (input: RouteInput) => call<ModelRoute>('POST', '/spotlight/routes', input),
  updateRoute: (uuid: string, input: RouteInput) => call<ModelRoute>('PATCH', `/spotlight/routes/${id(uuid)}`, input),
  deleteRoute: (uuid: string) => call<void>('DELETE', `/spotlight/routes/${id(uuid)}`),
  /** `from`, `to`: UTC dates (YYYY-MM-DD), both included. */
  modelUsage: (from: string, to: string) => call<ModelUsage>('GET', `/spotlight/usage${query({ from, to })}`),

  keys: () => call<{ keys: PlatformKey[] }>('GET', '/auth/platform_keys'),
  createKey: (name: string, role?: Role) =>
    call<{ uuid: string; key: string }>('POST', '/auth/platform_keys', role ? { name, role } : { name }),
  revokeKey: (uuid: string) => call<void>('DELETE', `/auth/platform_keys/${id(uuid)}`),
  /** `models`: null allows every model. */
  updateKey: (uuid: string, input: { name?: string; models?: string[] | null }) =>
    call<PlatformKey>('PATCH', `/auth/platform_keys/${id(uuid)}`, input),
  rateLimits: () => call<{ rate_limits: RateLimit[] }>('GET', '/spotlight/rate_limits'),
  /** `path`: `agents/<uuid>` or `platform_keys/<uuid>`. */
  rateLimit: (path: string) => call<RateLimit>('GET', `/spotlight/rate_limits/${path}`),
  setRateLimit: (path: string, limits: { rpm: number | null; tpm: number | null }) =>
    call<RateLimit>('PATCH', `/spotlight/rate_limits/${path}`, limits),
  ingestTokens: () => call<{ tokens: IngestToken[] }>('GET', '/auth/ingest_tokens'),
  createIngestToken: () => call<{ uuid: string; token: string }>('POST', '/auth/generate_ingest_token'),
  revokeIngestToken: (uuid: string) => call<void>('DELETE', `/auth/ingest_tokens/${id(uuid)}`),
  signingSecret: () => call<{ secret: string; created_at: string }>('GET', '/auth/webhook_signing_secret'),
  rotateSigningSecret: () =>
    call<{ secret: string; created_at: string }>('POST', '/auth/webhook_signing_secret/rotate'),

  workspaces: () => call<{ workspaces: Workspace[] }>('GET', '/workspaces'),
  workspace: (uuid: string) => call<Workspace>('GET', `/workspaces/${id(uuid)}`),
  createWorkspace: (name: string) => call<Workspace>('POST', '/workspaces', { name }),
  members: (uuid: string) => call<{ members: Member[] }>('GET', `/workspaces/${id(uuid)}/members`),
  changeRole: (uuid: string, userUuid: string, role: Role) =>
    call<Member>('PATCH', `/workspaces/${id(uuid)}/members/${id(userUuid)}`, { role }),
  removeMember: (uuid: string, userUuid: string) =>
    call<void>('DELETE', `/workspaces/${id(uuid)}/members/${id(userUuid)}`),
  leave: (uuid: string) => call<void>('POST', `/workspaces/${id(uuid)}/leave`),
  invitations: (uuid: string) => call<{ invitations: Invitation[] }>('GET', `/workspaces/${id(uuid)}/invitations`),
  invite: (uuid: string, input: { email: string; role: Role }) =>
    call<Invitation>('POST', `/workspaces/${id(uuid)}/invitations`, input),
  revokeInvitation: (uuid: string, invitationUuid: string) =>
    call<void>('DELETE', `/workspaces/${id(uuid)}/invitations/${id(invitationUuid)}`),
  acceptInvitation: (token: string) => call<Workspace>('POST', '/invitations/accept', { token }),

  authorizationRequest: (requestId: string) =>
    call<AuthorizationRequest>('GET', `/oauth/authorization_requests/${id(requestId)}`),
  approveAuthorization: (requestId: string, input: { workspace_uuid: string; role: 'viewer' | 'member' }) =>
    call<{ redirect_to: string }>('POST', `/oauth/authorization_requests/${id(requestId)}/approve`, input),
  denyAuthorization: (requestId: string) =>
    call<{ redirect_to: string }>('POST', `/oauth/authorization_requests/${id(requestId)}/deny`, {}),
  mcpGrants: () => call<{ grants: McpGrant[] }>('GET', '/auth/mcp_grants'),
  revokeMcpGrant: (uuid: string) => call<void>('DELETE', `/auth/mcp_grants/${id(uuid)}`),
  auditLog: (uuid: string, cursor?: string, action?: string) =>
    call<{ entries: AuditEntry[]; next_cursor: string | null }>(
      'GET',
      `/workspaces/${id(uuid)}/audit_log${query({ cursor, action })}`,
    ),
};
