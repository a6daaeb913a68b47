import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { createSecretBox } from '../../src/lib/crypto.js';
import { agentsRepo } from '../../src/modules/agents/agents-repo.js';
import { createProvidersModule } from '../../src/modules/providers/providers-module.js';
import { routesRepo } from '../../src/modules/spotlight/routes/routes-repo.js';
import { call, type TestApp } from './app.js';
import { actingAs, createAgent, type TestUser } from './factories.js';

/** The kinds of owned resources a route's path can name. A new kind joins here and in createRouteContext. */
export const ID_KINDS = [
  'agent',
  'platformKey',
  'ingestToken',
  'task',
  'runningTask',
  'doneTask',
  'trigger',
  'schedule',
  'delivery',
  'trace',
  'providerCredential',
  'modelCall',
  'modelRoute',
  'workspace',
] as const;
export type IdKind = (typeof ID_KINDS)[number];

/** What a route's example request needs: ids of resources the requesting user owns, and their password. */
export interface RouteContext extends Record<IdKind, string> {
  password: string;
  /** The lease_id under which `runningTask` is held. */
  lease: string;
  /** The name of `providerCredential` (the model prefix of the proxy). */
  credentialName: string;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** One authenticated route and one valid example request for it. */
export interface CatalogueRoute {
  method: Method;
  /** The path as registered in Fastify (`/agent/:id`). */
  path: string;
  url(ctx: RouteContext): string;
  body?(ctx: RouteContext): unknown;
  /** 'user' takes a JWT or a platform key; 'session' a JWT only. */
  auth: 'user' | 'session';
  /** Routes of the agents feature answer 403 to accounts without it. */
  feature?: 'agents';
  /** The owned resources the url names, in path order. */
  ids?: IdKind[];
  /** The status of the example request when it succeeds. */
  status: number;
  /**
   * The path speaks another protocol (the model proxy speaks OpenAI's, /a2a A2A's JSON-RPC): its input errors take that
   * protocol's shape, so the generic bad-input table leaves it to its own tests.
   */
  protocol?: 'openai' | 'a2a';
  /** Headers the example request needs besides the credential (e.g. A2A-Version). */
  headers?: Record<string, string>;
  /** False when the example's answer holds none of the context's resources (nothing to list yet). */
  showsOwn?: false;
  /**
   * A live event stream that stays open until its client goes: the example request keeps the
   * status and headers of a 200 and lets the stream go (see `sendRoute`).
   */
  stream?: true;
}

/**
 * Every route that requires a credential. Later capabilities append their routes here; the
 * catalogue test fails while a registered authenticated route is missing.
 */
export const ROUTES: CatalogueRoute[] = [
  {
    method: 'GET',
    path: '/telemetry/fetch_traces',
    url: () => '/telemetry/fetch_traces?limit=5',
    auth: 'session',
    status: 200,
  },
  {
    method: 'GET',
    path: '/telemetry/fetch_trace/:traceId',
    url: (ctx) => `/telemetry/fetch_trace/${ctx.trace}`,
    auth: 'session',
    ids: ['trace'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/telemetry/fetch_logs',
    url: () => '/telemetry/fetch_logs?limit=5',
    auth: 'session',
    status: 200,
  },
  {
    method: 'GET',
    path: '/telemetry/fetch_usage',
    url: () => '/telemetry/fetch_usage?group_by=model',
    auth: 'session',
    status: 200,
  },
  {
    method: 'POST',
    path: '/auth/change_password',
    url: () => '/auth/change_password',
    body: (ctx) => ({ current_password: ctx.password, new_password: `new-${randomUUID()}` }),
    auth: 'session',
    status: 204,
  },
  {
    method: 'POST',
    path: '/auth/platform_keys',
    url: () => '/auth/platform_keys',
    body: () => ({ name: 'catalogue key' }),
    auth: 'session',
    status: 201,
  },
  { method: 'GET', path: '/auth/platform_keys', url: () => '/auth/platform_keys', auth: 'session', status: 200 },
  {
    method: 'PATCH',
    path: '/auth/platform_keys/:uuid',
    url: (ctx) => `/auth/platform_keys/${ctx.platformKey}`,
    body: () => ({ models: ['*'] }),
    auth: 'session',
    ids: ['platformKey'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/auth/platform_keys/:uuid',
    url: (ctx) => `/auth/platform_keys/${ctx.platformKey}`,
    auth: 'session',
    ids: ['platformKey'],
    status: 204,
  },
  {
    method: 'POST',
    path: '/auth/generate_ingest_token',
    url: () => '/auth/generate_ingest_token',
    auth: 'session',
    status: 201,
  },
  { method: 'GET', path: '/auth/ingest_tokens', url: () => '/auth/ingest_tokens', auth: 'session', status: 200 },
  {
    method: 'DELETE',
    path: '/auth/ingest_tokens/:uuid',
    url: (ctx) => `/auth/ingest_tokens/${ctx.ingestToken}`,
    auth: 'session',
    ids: ['ingestToken'],
    status: 204,
  },
  {
    method: 'GET',
    path: '/auth/webhook_signing_secret',
    url: () => '/auth/webhook_signing_secret',
    auth: 'session',
    status: 200,
  },
  {
    method: 'POST',
    path: '/auth/webhook_signing_secret/rotate',
    url: () => '/auth/webhook_signing_secret/rotate',
    auth: 'session',
    status: 200,
  },
  {
    method: 'POST',
    path: '/agent',
    url: () => '/agent',
    body: () => ({ name: 'catalogue agent', concurrency: 3 }),
    auth: 'user',
    feature: 'agents',
    status: 201,
  },
  {
    method: 'GET',
    path: '/agent/list',
    url: () => '/agent/list?page=1&limit=5',
    auth: 'user',
    feature: 'agents',
    status: 200,
  },
  {
    method: 'GET',
    path: '/agent/:id',
    url: (ctx) => `/agent/${ctx.agent}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/agent/:id',
    url: (ctx) => `/agent/${ctx.agent}`,
    body: () => ({ name: 'renamed by catalogue', status: 'paused' }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/agent/:id',
    url: (ctx) => `/agent/${ctx.agent}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 204,
  },
  {
    method: 'POST',
    path: '/agent/request/:id',
    url: (ctx) => `/agent/request/${ctx.agent}`,
    body: () => ({ message: 'catalogue task', priority: 3 }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 202,
  },
  {
    method: 'GET',
    path: '/agent/:id/task/:taskId',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.task}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'task'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/agent/:id/tasks',
    url: (ctx) => `/agent/${ctx.agent}/tasks?status=queued&page=1&limit=5`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/agent/:id/task/:taskId/events',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.doneTask}/events`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'doneTask'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/agent/:id/tasks/events',
    url: (ctx) => `/agent/${ctx.agent}/tasks/events`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
    stream: true,
  },
  {
    method: 'POST',
    path: '/agent/:id/task/:taskId/message',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.task}/message`,
    body: () => ({ message: 'more context' }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'task'],
    status: 200,
  },
  {
    method: 'POST',
    path: '/agent/:id/task/:taskId/cancel',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.task}/cancel`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'task'],
    status: 200,
  },
  {
    method: 'POST',
    path: '/agent/:id/task/:taskId/rerun',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.doneTask}/rerun`,
    body: () => ({ priority: 7 }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'doneTask'],
    status: 202,
  },
  {
    method: 'POST',
    path: '/agent/:id/tasks/bulk',
    url: (ctx) => `/agent/${ctx.agent}/tasks/bulk`,
    // A filter that matches nothing: the other examples keep their tasks.
    body: () => ({ action: 'cancel', filter: { task_ids: [randomUUID()] } }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
    showsOwn: false,
  },
  {
    method: 'POST',
    path: '/agent/:id/tasks/claim',
    url: (ctx) => `/agent/${ctx.agent}/tasks/claim`,
    body: () => ({ max_tasks: 2, lease_seconds: 30 }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'POST',
    path: '/agent/:id/tasks/complete',
    url: (ctx) => `/agent/${ctx.agent}/tasks/complete`,
    body: (ctx) => ({ tasks: [{ task_id: ctx.runningTask, lease_id: ctx.lease, result: { summary: 'done' } }] }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  ...(['progress', 'input_request', 'complete', 'fail', 'release'] as const).map(
    (op): CatalogueRoute => ({
      method: 'POST',
      path: `/agent/:id/task/:taskId/${op}`,
      url: (ctx) => `/agent/${ctx.agent}/task/${ctx.runningTask}/${op}`,
      body: (ctx) => WORKER_BODIES[op](ctx.lease),
      auth: 'user',
      feature: 'agents',
      ids: ['agent', 'runningTask'],
      status: 200,
    }),
  ),
  {
    method: 'POST',
    path: '/v1/agent/:id/schedules',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules`,
    body: () => ({ name: 'catalogue schedule', cron: '0 3 * * *', message: 'Nightly {{schedule.local_date}}' }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/schedules',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules?page=1&limit=5`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'POST',
    path: '/v1/agent/:id/schedules/preview',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/preview`,
    body: () => ({ cron: '@daily', timezone: 'Europe/Berlin', count: 2 }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
    showsOwn: false,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/schedules/:scheduleId',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'schedule'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/v1/agent/:id/schedules/:scheduleId',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}`,
    body: () => ({ name: 'renamed by catalogue', enabled: false }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'schedule'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/v1/agent/:id/schedules/:scheduleId',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'schedule'],
    status: 204,
  },
  {
    method: 'POST',
    path: '/v1/agent/:id/schedules/:scheduleId/run',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}/run`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'schedule'],
    status: 202,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/schedules/:scheduleId/runs',
    url: (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}/runs?page=1&limit=5`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'schedule'],
    status: 200,
  },
  {
    method: 'POST',
    path: '/v1/agent/:id/triggers',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers`,
    body: () => ({ name: 'catalogue trigger', message_template: 'Review {{payload.repository.name}}' }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/triggers',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers?page=1&limit=5`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/triggers/:triggerId',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'trigger'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/v1/agent/:id/triggers/:triggerId',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}`,
    body: () => ({ name: 'renamed by catalogue', message_template: '{{payload}}', enabled: false }),
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'trigger'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/v1/agent/:id/triggers/:triggerId',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'trigger'],
    status: 204,
  },
  {
    method: 'POST',
    path: '/v1/agent/:id/triggers/:triggerId/rotate_secret',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}/rotate_secret`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'trigger'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/v1/agent/:id/triggers/:triggerId/deliveries',
    url: (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}/deliveries?page=1&limit=5`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'trigger'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/agent/:id/task/:taskId/deliveries',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.doneTask}/deliveries`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'doneTask'],
    status: 200,
  },
  {
    // A callback delivery needs a reachable receiver, which the generated suites do not run (the
    // callbacks tests do): the example names a delivery the task does not have, so it answers 404.
    method: 'POST',
    path: '/agent/:id/task/:taskId/deliveries/:deliveryId/retry',
    url: (ctx) => `/agent/${ctx.agent}/task/${ctx.doneTask}/deliveries/${ctx.delivery}/retry`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent', 'doneTask', 'delivery'],
    status: 404,
  },
  {
    method: 'POST',
    path: '/user/provider_credentials',
    url: () => '/user/provider_credentials',
    body: () => ({
      name: `catalogue-${randomUUID().slice(0, 8)}`,
      provider: 'openai',
      api_key: 'sk-catalogue-provider-key',
      // A literal public address: accepted without DNS; no catalogue request calls it.
      base_url: 'https://93.184.215.14/v1',
    }),
    auth: 'session',
    status: 201,
  },
  {
    method: 'GET',
    path: '/workspaces/:id/audit_log',
    url: (ctx) => `/workspaces/${ctx.workspace}/audit_log?limit=5`,
    auth: 'session',
    ids: ['workspace'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/user/provider_credentials',
    url: () => '/user/provider_credentials',
    auth: 'session',
    status: 200,
  },
  {
    method: 'GET',
    path: '/user/provider_credentials/:uuid',
    url: (ctx) => `/user/provider_credentials/${ctx.providerCredential}`,
    auth: 'session',
    ids: ['providerCredential'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/user/provider_credentials/:uuid',
    url: (ctx) => `/user/provider_credentials/${ctx.providerCredential}`,
    body: () => ({ name: 'renamed-by-catalogue', api_key: 'sk-another-catalogue-key' }),
    auth: 'session',
    ids: ['providerCredential'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/user/provider_credentials/:uuid',
    url: (ctx) => `/user/provider_credentials/${ctx.providerCredential}`,
    auth: 'session',
    ids: ['providerCredential'],
    status: 204,
  },
  {
    // The context's credential points at a loopback port the guard refuses: the call is made,
    // recorded and answered 502 without any network.
    method: 'POST',
    path: '/spotlight/v1/chat/completions',
    url: () => '/spotlight/v1/chat/completions',
    body: (ctx) => ({ model: `${ctx.credentialName}/gpt-4o-mini`, messages: [{ role: 'user', content: 'hi' }] }),
    auth: 'user',
    protocol: 'openai',
    status: 502,
  },
  {
    method: 'POST',
    path: '/spotlight/v1/responses',
    url: () => '/spotlight/v1/responses',
    body: (ctx) => ({ model: `${ctx.credentialName}/gpt-4o-mini`, input: 'hi' }),
    auth: 'user',
    protocol: 'openai',
    status: 502,
  },
  {
    method: 'GET',
    path: '/spotlight/v1/models',
    url: () => '/spotlight/v1/models',
    auth: 'user',
    protocol: 'openai',
    showsOwn: false,
    status: 200,
  },
  {
    method: 'POST',
    path: '/spotlight/routes',
    url: () => '/spotlight/routes',
    body: (ctx) => ({
      name: `catalogue-${randomUUID().slice(0, 8)}`,
      targets: [{ provider_credential_uuid: ctx.providerCredential, model: 'gpt-4o-mini' }],
    }),
    auth: 'session',
    status: 201,
  },
  {
    method: 'GET',
    path: '/spotlight/routes',
    url: () => '/spotlight/routes',
    auth: 'user',
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/routes/:uuid',
    url: (ctx) => `/spotlight/routes/${ctx.modelRoute}`,
    auth: 'user',
    ids: ['modelRoute'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/routes/:uuid',
    url: (ctx) => `/spotlight/routes/${ctx.modelRoute}`,
    body: () => ({ retry_on: ['5xx'], cache_ttl_seconds: 60 }),
    auth: 'session',
    ids: ['modelRoute'],
    status: 200,
  },
  {
    method: 'DELETE',
    path: '/spotlight/routes/:uuid',
    url: (ctx) => `/spotlight/routes/${ctx.modelRoute}`,
    auth: 'session',
    ids: ['modelRoute'],
    status: 204,
  },
  {
    method: 'GET',
    path: '/spotlight/usage',
    url: () => '/spotlight/usage',
    auth: 'user',
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/calls',
    url: () => '/spotlight/calls?page=1&limit=5',
    auth: 'user',
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/calls/:id',
    url: (ctx) => `/spotlight/calls/${ctx.modelCall}`,
    auth: 'user',
    ids: ['modelCall'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/budgets',
    url: () => '/spotlight/budgets',
    auth: 'user',
    showsOwn: false,
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/budgets/account',
    url: () => '/spotlight/budgets/account',
    auth: 'user',
    // The account's budget names no resource (its id is null).
    showsOwn: false,
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/budgets/account',
    url: () => '/spotlight/budgets/account',
    body: () => ({ monthly_usd: 100 }),
    auth: 'session',
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/budgets/agents/:agentId',
    url: (ctx) => `/spotlight/budgets/agents/${ctx.agent}`,
    auth: 'user',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/budgets/agents/:agentId',
    url: (ctx) => `/spotlight/budgets/agents/${ctx.agent}`,
    body: () => ({ daily_usd: 10, per_task_usd: 1 }),
    auth: 'session',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/budgets/platform_keys/:keyUuid',
    url: (ctx) => `/spotlight/budgets/platform_keys/${ctx.platformKey}`,
    auth: 'user',
    ids: ['platformKey'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/budgets/platform_keys/:keyUuid',
    url: (ctx) => `/spotlight/budgets/platform_keys/${ctx.platformKey}`,
    body: () => ({ monthly_usd: 50 }),
    auth: 'session',
    ids: ['platformKey'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/rate_limits',
    url: () => '/spotlight/rate_limits',
    auth: 'user',
    showsOwn: false,
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/rate_limits/platform_keys/:keyUuid',
    url: (ctx) => `/spotlight/rate_limits/platform_keys/${ctx.platformKey}`,
    auth: 'user',
    ids: ['platformKey'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/rate_limits/platform_keys/:keyUuid',
    url: (ctx) => `/spotlight/rate_limits/platform_keys/${ctx.platformKey}`,
    body: () => ({ rpm: 100_000, tpm: 100_000_000 }),
    auth: 'session',
    ids: ['platformKey'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/rate_limits/agents/:agentId',
    url: (ctx) => `/spotlight/rate_limits/agents/${ctx.agent}`,
    auth: 'user',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/spotlight/rate_limits/agents/:agentId',
    url: (ctx) => `/spotlight/rate_limits/agents/${ctx.agent}`,
    body: () => ({ rpm: 100_000 }),
    auth: 'session',
    ids: ['agent'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/spotlight/budgets/tasks/:taskId',
    url: (ctx) => `/spotlight/budgets/tasks/${ctx.task}`,
    auth: 'user',
    ids: ['task'],
    status: 200,
  },
  {
    method: 'GET',
    path: '/a2a/:agentId/.well-known/agent-card.json',
    url: (ctx) => `/a2a/${ctx.agent}/.well-known/agent-card.json`,
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    protocol: 'a2a',
    status: 200,
  },
  {
    method: 'POST',
    path: '/a2a/:agentId',
    url: (ctx) => `/a2a/${ctx.agent}`,
    body: () => ({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageSize: 5 } }),
    headers: { 'a2a-version': '1.0' },
    auth: 'user',
    feature: 'agents',
    ids: ['agent'],
    protocol: 'a2a',
    status: 200,
  },
];

const WORKER_BODIES = {
  progress: (lease: string) => ({ lease_id: lease, current_step: 'step', steps_completed: 1, total_steps: 2 }),
  input_request: (lease: string) => ({ lease_id: lease, message: 'which branch?' }),
  complete: (lease: string) => ({ lease_id: lease, result: { summary: 'done', findings: [] } }),
  fail: (lease: string) => ({ lease_id: lease, error: { message: 'broke' } }),
  release: (lease: string) => ({ lease_id: lease }),
};

/**
 * Routes that take an ingest token and nothing else (OTLP ingest): they answer 401 without a
 * credential but speak another protocol, so the telemetry tests cover their credential matrix.
 */
export const INGEST_ROUTES = [
  { method: 'POST', path: '/telemetry/ingest_http/v1/traces' },
  { method: 'POST', path: '/telemetry/ingest_http/v1/logs' },
];

/**
 * The MCP endpoint speaks JSON-RPC over Streamable HTTP: its refusals and bodies are MCP's, so
 * test/modules/mcp covers its credential matrix and the catalogue only counts it. (GET and DELETE
 * are hidden from the OpenAPI document and answer 405 once authenticated.)
 */
export const MCP_ROUTES = [{ method: 'POST', path: '/mcp' }];

/**
 * A2A's HTTP+JSON binding: its refusals and bodies are A2A's (google.rpc.Status), so
 * test/modules/a2a-server/a2a-rest.test.ts and test/http/permissions.test.ts cover its credential
 * matrix and the catalogue only counts it.
 */
export const A2A_REST_ROUTES = [
  { method: 'POST', path: '/a2a/:agentId/message:send' },
  { method: 'POST', path: '/a2a/:agentId/message:stream' },
  { method: 'GET', path: '/a2a/:agentId/tasks' },
  { method: 'GET', path: '/a2a/:agentId/tasks/:taskId' },
  { method: 'POST', path: '/a2a/:agentId/tasks/:taskId' },
  { method: 'GET', path: '/a2a/:agentId/tasks/:taskId/pushNotificationConfigs' },
  { method: 'POST', path: '/a2a/:agentId/tasks/:taskId/pushNotificationConfigs' },
  { method: 'GET', path: '/a2a/:agentId/tasks/:taskId/pushNotificationConfigs/:configId' },
  { method: 'DELETE', path: '/a2a/:agentId/tasks/:taskId/pushNotificationConfigs/:configId' },
  { method: 'GET', path: '/a2a/:agentId/extendedAgentCard' },
];

/**
 * The MCP authorization server's signed-in routes (the consent page's calls and the connected
 * clients): an example request needs an authorization request made by a registered client, so
 * test/modules/mcp-oauth covers them and the catalogue only counts them.
 */
export const MCP_OAUTH_ROUTES = [
  { method: 'GET', path: '/oauth/authorization_requests/:id' },
  { method: 'POST', path: '/oauth/authorization_requests/:id/approve' },
  { method: 'POST', path: '/oauth/authorization_requests/:id/deny' },
  { method: 'GET', path: '/auth/mcp_grants' },
  { method: 'DELETE', path: '/auth/mcp_grants/:uuid' },
];

/**
 * The workspace, member and invitation routes (session only): their example requests change
 * memberships or end workspaces, which the shared context cannot survive, so
 * test/modules/workspaces covers their credential matrix and the catalogue only counts them.
 */
export const WORKSPACE_ROUTES = [
  { method: 'POST', path: '/workspaces' },
  { method: 'GET', path: '/workspaces' },
  { method: 'GET', path: '/workspaces/:id' },
  { method: 'PATCH', path: '/workspaces/:id' },
  { method: 'DELETE', path: '/workspaces/:id' },
  { method: 'POST', path: '/workspaces/:id/leave' },
  { method: 'GET', path: '/workspaces/:id/members' },
  { method: 'PATCH', path: '/workspaces/:id/members/:userUuid' },
  { method: 'DELETE', path: '/workspaces/:id/members/:userUuid' },
  { method: 'POST', path: '/workspaces/:id/invitations' },
  { method: 'GET', path: '/workspaces/:id/invitations' },
  { method: 'DELETE', path: '/workspaces/:id/invitations/:uuid' },
  { method: 'POST', path: '/invitations/accept' },
];

/** An id of the kind that names nothing: a fresh UUID, or fresh hex for a trace id. */
export function freshId(kind: IdKind): string {
  return kind === 'trace' ? randomUUID().replaceAll('-', '') : randomUUID();
}

/** `METHOD /path` of a catalogue entry or a registered route. */
export const routeKey = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

/** Secrets of the context's credentials, for tests that need to use them afterwards. */
export interface ContextSecrets {
  platformKey: string;
  ingestToken: string;
  /** The webhook secret of `trigger` (a random stand-in when the trigger is a placeholder). */
  trigger: string;
}

/**
 * Creates one resource of each kind for `user` through the API, except the kinds given in
 * `given` (e.g. another user's agent for an account without the agents feature).
 */
export async function createRouteContext(
  t: TestApp,
  user: TestUser,
  given: Partial<RouteContext> = {},
): Promise<{ ctx: RouteContext; secrets: ContextSecrets }> {
  const key = await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: { name: 'context key' } });
  const token = await call(t.app, 'POST', '/auth/generate_ingest_token', { token: user.token });
  if (key.statusCode !== 201 || token.statusCode !== 201) throw new Error(`context setup failed: ${key.body}`);
  const agent = given.agent ?? (await createAgent(t, user)).uuid;
  const tasks = given.agent ? placeholderTasks() : await createContextTasks(t, user, agent);
  const trigger = given.agent
    ? { uuid: randomUUID(), webhook_secret: `whs_${randomUUID()}` }
    : await createContextTrigger(t, user, agent);
  const schedule = given.agent ? randomUUID() : await createContextSchedule(t, user, agent);
  const trace = await createContextTrace(t, token.json().token);
  const model = await createContextModelCall(t, user);
  const modelRoute = await createContextModelRoute(t, user);
  return {
    ctx: {
      agent,
      ...model,
      modelRoute,
      platformKey: key.json().uuid,
      ingestToken: token.json().uuid,
      password: user.password,
      trigger: trigger.uuid,
      schedule,
      // No callback delivery exists without a reachable receiver: a fresh id that names none.
      delivery: randomUUID(),
      trace,
      // The user's personal workspace has the user's uuid.
      workspace: user.uuid,
      ...tasks,
      ...given,
    },
    secrets: { platformKey: key.json().key, ingestToken: token.json().token, trigger: trigger.webhook_secret },
  };
}

/**
 * A one-span trace with token usage (its model named after the trace) and a log record in it,
 * sent with the ingest token, so every telemetry list has something of the user's; returns the trace id.
 */
async function createContextTrace(t: TestApp, ingestToken: string): Promise<string> {
  const traceId = randomUUID().replaceAll('-', '');
  const now = `${Date.now()}000000`;
  const attributes = [
    { key: 'gen_ai.response.model', value: { stringValue: `model-${traceId}` } },
    { key: 'gen_ai.usage.input_tokens', value: { intValue: 1 } },
  ];
  const span = { traceId, spanId: traceId.slice(0, 16), name: 'context', startTimeUnixNano: now, endTimeUnixNano: now };
  const send = (signal: string, body: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/telemetry/ingest_http/v1/${signal}`,
      headers: { authorization: ingestToken, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const spans = await send('traces', { resourceSpans: [{ scopeSpans: [{ spans: [{ ...span, attributes }] }] }] });
  const logs = await send('logs', {
    resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId, timeUnixNano: now }] }] }],
  });
  if (spans.body !== '{}' || logs.body !== '{}') throw new Error(`telemetry setup failed: ${spans.body} ${logs.body}`);
  return traceId;
}

/**
 * A provider credential whose upstream is a closed loopback port, and one recorded call through it.
 * The credential is made through the production service with private addresses allowed (the API
 * of a test app without that setting refuses them); calling it is refused or fails at once.
 */
async function createContextModelCall(t: TestApp, user: TestUser) {
  const providers = createProvidersModule({
    config: { ...t.config, allowPrivateUrls: true },
    runtime: t.runtime,
    box: createSecretBox(t.runtime.secrets.encryptionKey),
    routesNaming: routesRepo.namingCredential,
    agentsUsing: agentsRepo.namesUsingCredential,
  }).service;
  const credentialName = `context-${randomUUID().slice(0, 8)}`;
  const credential = await providers.create(actingAs(user), {
    name: credentialName,
    provider: 'openai',
    api_key: 'sk-context-provider-key',
    base_url: 'http://127.0.0.1:9/v1',
  });
  const res = await call(t.app, 'POST', '/spotlight/v1/chat/completions', {
    token: user.token,
    body: { model: `${credentialName}/gpt-4o-mini`, messages: [{ role: 'user', content: 'context' }] },
  });
  const modelCall = res.headers['x-taskhook-call-id'];
  if (res.statusCode !== 502 || typeof modelCall !== 'string') throw new Error(`model call setup failed: ${res.body}`);
  // The proxy records the credential's last_used_at without holding the answer back for it; wait
  // for that write so a snapshot taken next does not see it land.
  for (let tries = 0; ; tries++) {
    const own = await call(t.app, 'GET', `/user/provider_credentials/${credential.uuid}`, { token: user.token });
    if (own.json().last_used_at !== null) break;
    if (tries === 200) throw new Error('the model call did not record last_used_at');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { providerCredential: credential.uuid, credentialName, modelCall };
}

/**
 * A model-proxy route whose only target is a credential of its own (so the context's credential
 * stays deletable: a credential a route names cannot be deleted).
 */
async function createContextModelRoute(t: TestApp, user: TestUser): Promise<string> {
  const providers = createProvidersModule({
    config: { ...t.config, allowPrivateUrls: true },
    runtime: t.runtime,
    box: createSecretBox(t.runtime.secrets.encryptionKey),
    routesNaming: routesRepo.namingCredential,
    agentsUsing: agentsRepo.namesUsingCredential,
  }).service;
  const credential = await providers.create(actingAs(user), {
    name: `route-target-${randomUUID().slice(0, 8)}`,
    provider: 'openai',
    api_key: 'sk-route-target-key',
    base_url: 'http://127.0.0.1:9/v1',
  });
  const res = await call(t.app, 'POST', '/spotlight/routes', {
    token: user.token,
    body: {
      name: `context-route-${randomUUID().slice(0, 8)}`,
      targets: [{ provider_credential_uuid: credential.uuid, model: 'gpt-4o-mini' }],
    },
  });
  if (res.statusCode !== 201) throw new Error(`route setup failed: ${res.body}`);
  return res.json().uuid as string;
}

/** A webhook trigger of the agent, with its secret. */
async function createContextTrigger(t: TestApp, user: TestUser, agent: string) {
  const res = await call(t.app, 'POST', `/v1/agent/${agent}/triggers`, {
    token: user.token,
    body: { name: 'context trigger', message_template: '{{payload}}' },
  });
  if (res.statusCode !== 201) throw new Error(`trigger setup failed: ${res.body}`);
  return res.json() as { uuid: string; webhook_secret: string };
}

/** A schedule of the agent (nightly, so it never fires during a test). */
async function createContextSchedule(t: TestApp, user: TestUser, agent: string): Promise<string> {
  const res = await call(t.app, 'POST', `/v1/agent/${agent}/schedules`, {
    token: user.token,
    body: { name: 'context schedule', cron: '0 3 1 1 *', message: 'yearly' },
  });
  if (res.statusCode !== 201) throw new Error(`schedule setup failed: ${res.body}`);
  return res.json().uuid as string;
}

type TaskIds = Pick<RouteContext, 'task' | 'runningTask' | 'doneTask' | 'lease'>;

function placeholderTasks(): TaskIds {
  return { task: randomUUID(), runningTask: randomUUID(), doneTask: randomUUID(), lease: randomUUID() };
}

/** A task held by a worker (with its lease), a completed one, and a queued one, in that order. */
async function createContextTasks(t: TestApp, user: TestUser, agent: string): Promise<TaskIds> {
  const token = user.token;
  const submit = async (message: string) => {
    const res = await call(t.app, 'POST', `/agent/request/${agent}`, { token, body: { message } });
    if (res.statusCode !== 202) throw new Error(`task setup failed: ${res.body}`);
    return res.json().task_id as string;
  };
  const claimOne = async () => {
    const res = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, { token, body: { max_tasks: 1 } });
    const claimed = res.json().tasks?.[0];
    if (!claimed) throw new Error(`task setup claim failed: ${res.body}`);
    return claimed as { task_id: string; lease_id: string };
  };
  const runningTask = await submit('held by a worker');
  const held = await claimOne();
  const doneTask = await submit('already done');
  const done = await claimOne();
  const completed = await call(t.app, 'POST', `/agent/${agent}/task/${doneTask}/complete`, {
    token,
    body: { lease_id: done.lease_id, result: { summary: 'ok', findings: [] } },
  });
  if (held.task_id !== runningTask || done.task_id !== doneTask || completed.statusCode !== 200) {
    throw new Error(`task setup failed: ${completed.body}`);
  }
  const task = await submit('waiting in the queue');
  return { task, runningTask, doneTask, lease: held.lease_id };
}

/**
 * Sends the route's example request with the given headers (and no credential unless they carry
 * one). A `stream` route's 200 answers as soon as its headers are out, with an empty body, and the
 * stream is closed as a client hanging up would; any other answer is read whole.
 */
export async function sendRoute(
  t: TestApp,
  route: CatalogueRoute,
  ctx: RouteContext,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  if (!route.stream) {
    return call(t.app, route.method, route.url(ctx), {
      body: route.body?.(ctx),
      headers: { ...route.headers, ...headers },
    });
  }
  const res = await t.app.inject({
    method: route.method,
    url: route.url(ctx),
    headers: { ...route.headers, ...headers },
    payloadAsStream: true,
  });
  const stream = res.stream();
  let body = '';
  if (res.statusCode === 200) {
    stream.destroy();
    (res.raw.res as { destroy(): void }).destroy();
  } else {
    for await (const chunk of stream) body += String(chunk);
  }
  return Object.assign(res, { body, payload: body, json: () => JSON.parse(body) });
}

/** The three ways of presenting a platform key. */
export function keyHeaders(key: string): Array<Record<string, string>> {
  return [{ 'x-service-api-key': key }, { 'x-api-key': key }, { authorization: `Bearer ${key}` }];
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * Every documented route as `{method, path}` in Fastify's form (`/agent/:id`), read from the
 * OpenAPI document the server serves: a route that is not documented is not in the catalogue.
 */
export function registeredRoutes(app: FastifyInstance): Array<{ method: string; path: string }> {
  const doc = app.swagger() as { paths?: Record<string, Partial<Record<(typeof METHODS)[number], unknown>>> };
  const out: Array<{ method: string; path: string }> = [];
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      if (operations[method]) out.push({ method: method.toUpperCase(), path: path.replace(/\{(\w+)\}/g, ':$1') });
    }
  }
  return out;
}

/** A concrete url for a registered path: every parameter a fresh UUID, every wildcard a word. */
export function probeUrl(path: string): string {
  return path.replace(/:[A-Za-z_]+/g, () => randomUUID()).replace(/\*/g, 'probe');
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INTEGER_RE = /^\d+$/;

/** Every response carries X-Request-Id and the three X-RateLimit-* headers (docs/api.md §2.4, §8). */
export function expectStandardHeaders(res: LightMyRequestResponse) {
  expect(String(res.headers['x-request-id'] ?? '')).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  expect(String(res.headers['x-ratelimit-limit'] ?? '')).toMatch(INTEGER_RE);
  expect(String(res.headers['x-ratelimit-remaining'] ?? '')).toMatch(INTEGER_RE);
  const reset = String(res.headers['x-ratelimit-reset'] ?? '');
  expect(reset).toMatch(INTEGER_RE);
  // Unix seconds, not milliseconds or seconds-from-now.
  expect(Number(reset)).toBeGreaterThan(1_000_000_000);
  expect(Number(reset)).toBeLessThan(100_000_000_000);
}

/** A fresh server-made request id. */
export function expectFreshRequestId(res: LightMyRequestResponse, notEqualTo: string) {
  const id = String(res.headers['x-request-id']);
  expect(id).toMatch(UUID_RE);
  expect(id).not.toBe(notEqualTo);
}

/** The flat authentication-failure body (docs/api.md §2.2), with its status. */
export function expectFlatError(res: LightMyRequestResponse, status: number, message: string) {
  expect({ status: res.statusCode, body: res.json() }).toEqual({ status, body: { error: message } });
  expectStandardHeaders(res);
}

/**
 * The documented error envelope, exactly: `{success: false, error: {code, message, details?}, meta}`
 * with `meta.request_id` equal to the X-Request-Id header. Returns the body.
 */
export function expectErrorEnvelope(
  res: LightMyRequestResponse,
  status: number,
  code: string,
  field?: string,
): Record<string, unknown> {
  expect({ status: res.statusCode, body: res.body }).toMatchObject({ status });
  const body = res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'meta', 'success']);
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  const allowed = ['code', 'details', 'message'];
  expect(Object.keys(body.error).every((k) => allowed.includes(k))).toBe(true);
  if (body.error.details !== undefined) {
    expect(Object.keys(body.error.details).sort()).toEqual(['field', 'reason']);
    expect(typeof body.error.details.reason).toBe('string');
  }
  if (field !== undefined) expect(body.error.details?.field).toBe(field);
  expect(Object.keys(body.meta).sort()).toEqual(['request_id', 'timestamp']);
  expect(body.meta.request_id).toBe(res.headers['x-request-id']);
  expect(body.meta.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  expectStandardHeaders(res);
  return body;
}

/** An error body without the parts that differ on every request. */
export function withoutVolatileMeta(body: Record<string, unknown>): Record<string, unknown> {
  const { request_id: _id, timestamp: _ts, ...meta } = (body.meta ?? {}) as Record<string, unknown>;
  return { ...body, meta };
}
