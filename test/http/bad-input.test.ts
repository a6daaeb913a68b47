import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import {
  bearer,
  type CatalogueRoute,
  createRouteContext,
  expectErrorEnvelope,
  type IdKind,
  ROUTES,
  type RouteContext,
  routeKey,
  sendRoute,
} from '../helpers/routes.js';

/** One malformed request: a body (raw text when `raw`), a content type, or a url of its own. */
interface BadCase {
  name: string;
  status: number;
  code: string;
  field?: string;
  body?: unknown;
  raw?: string;
  contentType?: string;
  url?: (ctx: RouteContext) => string;
}

const byKey = (key: string): CatalogueRoute => {
  const route = ROUTES.find((r) => routeKey(r) === key);
  if (!route) throw new Error(`no catalogue entry ${key}`);
  return route;
};

const invalid = (name: string, body: unknown, field?: string): BadCase => ({
  name,
  body,
  field,
  status: 400,
  code: 'INVALID_REQUEST',
});

/** A raw body: 400 INVALID_REQUEST, or 415 when sent with the given content type ('' for none). */
const raw = (name: string, text: string, contentType?: string): BadCase =>
  contentType === undefined
    ? { name, raw: text, status: 400, code: 'INVALID_REQUEST' }
    : { name, raw: text, contentType, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' };

const OTHER_MEDIA_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data'];

/** Malformed bodies any route with a JSON body refuses, built from its valid example. */
function bodyCases(example: Record<string, unknown>): BadCase[] {
  const text = JSON.stringify(example);
  return [
    raw('not JSON', '{"name": '),
    raw('trailing garbage', `${text}x`),
    raw('prototype pollution', '{"__proto__": {"x": 1}}'),
    raw('empty JSON body', ''),
    ...['[]', '[{}]', '5', '"text"', 'null', 'true'].map((r) => raw(`JSON ${r} instead of an object`, r)),
    invalid('an unknown field', { ...example, surprise: 1 }, 'surprise'),
    raw('no content type', text, ''),
    ...OTHER_MEDIA_TYPES.map((type) => raw(`content type ${type}`, text, type)),
  ];
}

/** An operation without a body accepts none, `null` or `{}`, and refuses anything else. */
const BODYLESS_CASES: BadCase[] = [
  invalid('a field', { surprise: 1 }, 'surprise'),
  ...['[]', '[1]', '"text"', '5', '{'].map((r) => raw(`body ${r}`, r)),
  raw('content type text/plain', 'hello', 'text/plain'),
];

const long = (n: number) => 'x'.repeat(n);

const AGENT_FIELD_CASES: BadCase[] = [
  invalid('name as a number', { name: 123 }, 'name'),
  invalid('name null', { name: null }, 'name'),
  invalid('empty name', { name: '' }, 'name'),
  invalid('name of 256 characters', { name: long(256) }, 'name'),
  invalid('description as a number', { name: 'a', description: 5 }, 'description'),
  invalid('description of 4001 characters', { name: 'a', description: long(4001) }, 'description'),
  invalid('concurrency as a string', { name: 'a', concurrency: '5' }, 'concurrency'),
  invalid('concurrency 0', { name: 'a', concurrency: 0 }, 'concurrency'),
  invalid('concurrency 1001', { name: 'a', concurrency: 1001 }, 'concurrency'),
  invalid('concurrency 1.5', { name: 'a', concurrency: 1.5 }, 'concurrency'),
  invalid('default_timeout_seconds 0', { name: 'a', default_timeout_seconds: 0 }, 'default_timeout_seconds'),
  invalid('default_timeout_seconds 86401', { name: 'a', default_timeout_seconds: 86401 }, 'default_timeout_seconds'),
  invalid(
    'default_timeout_seconds as a string',
    { name: 'a', default_timeout_seconds: '60' },
    'default_timeout_seconds',
  ),
  invalid('runtime as a string', { name: 'a', runtime: 'worker' }, 'runtime'),
  invalid('runtime of an unknown type', { name: 'a', runtime: { type: 'teleport' } }),
  invalid('runtime with an unknown field', { name: 'a', runtime: { type: 'worker', extra: 1 } }),
];

/** Field cases shared by trigger create and patch; templates that do not parse name their position. */
const TRIGGER_FIELD_CASES: BadCase[] = [
  invalid('name as a number', { name: 1, message_template: 'm' }, 'name'),
  invalid('name null', { name: null, message_template: 'm' }, 'name'),
  invalid('empty name', { name: '', message_template: 'm' }, 'name'),
  invalid('name of 256 characters', { name: long(256), message_template: 'm' }, 'name'),
  invalid('message_template as a number', { name: 'n', message_template: 5 }, 'message_template'),
  invalid('message_template as an object', { name: 'n', message_template: { a: 1 } }, 'message_template'),
  invalid('empty message_template', { name: 'n', message_template: '' }, 'message_template'),
  invalid('message_template of 10,001 characters', { name: 'n', message_template: long(10_001) }, 'message_template'),
  invalid('enabled as a string', { name: 'n', message_template: 'm', enabled: 'true' }, 'enabled'),
  invalid('enabled as a number', { name: 'n', message_template: 'm', enabled: 1 }, 'enabled'),
  ...['{{ foo }}', '{{payload.}}', '{{payload..a}}', 'unclosed {{payload.a', '{{}}', '{{payload.a}'].map((template) =>
    invalid(`template ${template}`, { name: 'n', message_template: template }, 'message_template'),
  ),
  invalid(
    'webhook_secret in the body',
    { name: 'n', message_template: 'm', webhook_secret: 'whs_x' },
    'webhook_secret',
  ),
  invalid('agent_uuid in the body', { name: 'n', message_template: 'm', agent_uuid: randomUUID() }, 'agent_uuid'),
];

const pageQueryCases = (url: (ctx: RouteContext) => string): BadCase[] =>
  'limit=0 limit=101 limit=abc limit=-1 limit=2.5 limit= page=0 page=1.5 page=abc page=-1'.split(' ').map((query) => ({
    name: `query ${query}`,
    url: (ctx: RouteContext) => `${url(ctx)}?${query}`,
    field: query.split('=')[0],
    status: 400,
    code: 'INVALID_REQUEST',
  }));

const CASES: Record<string, BadCase[]> = {
  'POST /agent': [
    ...bodyCases({ name: 'a' }),
    ...AGENT_FIELD_CASES,
    invalid('missing name', { concurrency: 2 }, 'name'),
    invalid('status on create', { name: 'a', status: 'active' }, 'status'),
  ],
  'PATCH /agent/:id': [
    ...bodyCases({ name: 'a' }),
    ...AGENT_FIELD_CASES,
    invalid('status error', { status: 'error' }, 'status'),
    invalid('status deleted', { status: 'deleted' }, 'status'),
    invalid('uuid in the body', { uuid: randomUUID() }, 'uuid'),
  ],
  'POST /auth/platform_keys': [
    ...bodyCases({ name: 'k' }),
    invalid('missing name', {}, 'name'),
    invalid('name as a number', { name: 123 }, 'name'),
    invalid('empty name', { name: '' }, 'name'),
    invalid('name of 256 characters', { name: long(256) }, 'name'),
    invalid('models as a string', { name: 'k', models: 'openai/*' }, 'models'),
    invalid('a * inside a pattern', { name: 'k', models: ['a*b'] }, 'models[0]'),
  ],
  'PATCH /auth/platform_keys/:uuid': [
    ...bodyCases({ models: null }),
    invalid('role', { role: 'viewer' }, 'role'),
    invalid('empty name', { name: '' }, 'name'),
    invalid('a duplicate pattern', { models: ['a', 'a'] }, 'models[1]'),
    invalid('101 patterns', { models: Array.from({ length: 101 }, (_, i) => `m${i}`) }, 'models'),
  ],
  'PATCH /spotlight/rate_limits/platform_keys/:keyUuid': [
    ...bodyCases({ rpm: 10 }),
    invalid('rpm 0', { rpm: 0 }, 'rpm'),
    invalid('rpm as a string', { rpm: '5' }, 'rpm'),
    invalid('rpm not an integer', { rpm: 1.5 }, 'rpm'),
    invalid('rpm over a million', { rpm: 1_000_001 }, 'rpm'),
    invalid('tpm over a billion', { tpm: 1_000_000_001 }, 'tpm'),
  ],
  'PATCH /spotlight/rate_limits/agents/:agentId': [
    ...bodyCases({ tpm: 1000 }),
    invalid('tpm negative', { tpm: -1 }, 'tpm'),
    invalid('a budget field', { daily_usd: 1 }, 'daily_usd'),
  ],
  'POST /auth/change_password': [
    ...bodyCases({ current_password: 'whatever1', new_password: 'whatever2' }),
    invalid('missing current_password', { new_password: 'long enough' }, 'current_password'),
    invalid('missing new_password', { current_password: 'long enough' }, 'new_password'),
    invalid(
      'current_password as a number',
      { current_password: 12345678, new_password: 'long enough' },
      'current_password',
    ),
    invalid('new_password as a number', { current_password: 'long enough', new_password: 12345678 }, 'new_password'),
    invalid('new_password too short', { current_password: 'long enough', new_password: 'short' }, 'new_password'),
    invalid('empty current_password', { current_password: '', new_password: 'long enough' }, 'current_password'),
  ],
  'POST /auth/generate_ingest_token': BODYLESS_CASES,
  'POST /auth/webhook_signing_secret/rotate': BODYLESS_CASES,
  'POST /agent/request/:id': [
    ...bodyCases({ message: 'review' }),
    invalid('missing message', { priority: 5 }, 'message'),
    invalid('empty message', { message: '' }, 'message'),
    invalid('message as a number', { message: 123 }, 'message'),
    invalid('message of 100,001 characters', { message: long(100_001) }, 'message'),
    invalid('priority 0', { message: 'm', priority: 0 }, 'priority'),
    invalid('priority 11', { message: 'm', priority: 11 }, 'priority'),
    invalid('priority as a string', { message: 'm', priority: '5' }, 'priority'),
    invalid('priority 5.5', { message: 'm', priority: 5.5 }, 'priority'),
    invalid('timeout_override 0', { message: 'm', timeout_override: 0 }, 'timeout_override'),
    invalid('timeout_override 86401', { message: 'm', timeout_override: 86401 }, 'timeout_override'),
    invalid('metadata as a string', { message: 'm', metadata: 'x' }, 'metadata'),
    invalid('metadata as an array', { message: 'm', metadata: [1] }, 'metadata'),
    invalid('metadata over 16 KiB', { message: 'm', metadata: { blob: long(17 * 1024) } }, 'metadata'),
    invalid('unknown callback_mode', { message: 'm', callback_mode: 'email' }, 'callback_mode'),
    invalid('webhook mode without webhook_url', { message: 'm', callback_mode: 'webhook' }, 'webhook_url'),
    invalid('webhook_url in poll mode', { message: 'm', webhook_url: 'https://example.com/hook' }, 'webhook_url'),
    invalid(
      'webhook_url not http(s)',
      { message: 'm', callback_mode: 'webhook', webhook_url: 'ftp://example.com/x' },
      'webhook_url',
    ),
    invalid(
      'webhook_url not absolute',
      { message: 'm', callback_mode: 'webhook', webhook_url: '/relative' },
      'webhook_url',
    ),
  ],
  'POST /agent/:id/task/:taskId/message': [
    ...bodyCases({ message: 'more' }),
    invalid('missing message', {}, 'message'),
    invalid('empty message', { message: '' }, 'message'),
    invalid('message as a number', { message: 7 }, 'message'),
  ],
  'POST /agent/:id/task/:taskId/cancel': BODYLESS_CASES,
  // The body is optional (none, null, {} or overrides): a body is checked as the submit's fields.
  'POST /agent/:id/task/:taskId/rerun': [
    invalid('an unknown field', { surprise: 1 }, 'surprise'),
    ...['[]', '[1]', '"text"', '5', '{'].map((r) => raw(`body ${r}`, r)),
    raw('content type text/plain', 'hello', 'text/plain'),
    invalid('empty message', { message: '' }, 'message'),
    invalid('priority 11', { priority: 11 }, 'priority'),
    invalid('priority as a string', { priority: '5' }, 'priority'),
    invalid('metadata as a string', { metadata: 'x' }, 'metadata'),
    invalid('metadata over 16 KiB', { metadata: { blob: long(17 * 1024) } }, 'metadata'),
    invalid('webhook mode without webhook_url', { callback_mode: 'webhook' }, 'webhook_url'),
    invalid('run_at and delay_seconds together', { run_at: '2030-01-01T00:00:00Z', delay_seconds: 5 }, 'run_at'),
    invalid('parent_task_id (no child tasks yet)', { parent_task_id: randomUUID() }, 'parent_task_id'),
  ],
  'POST /agent/:id/tasks/bulk': [
    ...bodyCases({ action: 'cancel', filter: { status: ['queued'] } }),
    invalid('missing action', { filter: { status: ['queued'] } }, 'action'),
    invalid('unknown action', { action: 'pause', filter: { status: ['queued'] } }, 'action'),
    invalid('missing filter', { action: 'cancel' }, 'filter'),
    invalid('empty filter', { action: 'cancel', filter: {} }, 'filter'),
    invalid('unknown filter field', { action: 'cancel', filter: { owner: 'me' } }, 'filter.owner'),
    invalid('empty status list', { action: 'cancel', filter: { status: [] } }, 'filter.status'),
    invalid('repeated status', { action: 'cancel', filter: { status: ['queued', 'queued'] } }, 'filter.status'),
    invalid(
      'created_after not a date-time',
      { action: 'cancel', filter: { created_after: 'today' } },
      'filter.created_after',
    ),
    invalid('empty metadata', { action: 'cancel', filter: { metadata: {} } }, 'filter.metadata'),
    invalid('empty task_ids', { action: 'cancel', filter: { task_ids: [] } }, 'filter.task_ids'),
    invalid('limit 0', { action: 'cancel', filter: { status: ['queued'] }, limit: 0 }, 'limit'),
    invalid('limit 1001', { action: 'cancel', filter: { status: ['queued'] }, limit: 1001 }, 'limit'),
    invalid('limit as a string', { action: 'cancel', filter: { status: ['queued'] }, limit: '5' }, 'limit'),
  ],
  'POST /agent/:id/tasks/claim': [
    ...bodyCases({ max_tasks: 1 }),
    invalid('max_tasks 0', { max_tasks: 0 }, 'max_tasks'),
    invalid('max_tasks 101', { max_tasks: 101 }, 'max_tasks'),
    invalid('max_tasks as a string', { max_tasks: '1' }, 'max_tasks'),
    invalid('wait_seconds 31', { wait_seconds: 31 }, 'wait_seconds'),
    invalid('wait_seconds -1', { wait_seconds: -1 }, 'wait_seconds'),
    invalid('lease_seconds 0', { lease_seconds: 0 }, 'lease_seconds'),
    invalid('lease_seconds 601', { lease_seconds: 601 }, 'lease_seconds'),
    invalid('empty worker_id', { worker_id: '' }, 'worker_id'),
  ],
  'POST /agent/:id/tasks/complete': [
    ...bodyCases({
      tasks: [{ task_id: '0190f0f0-0000-7000-8000-000000000000', lease_id: 'l', result: { summary: 's' } }],
    }),
    invalid('no tasks', { tasks: [] }, 'tasks'),
    invalid('tasks not an array', { tasks: {} }, 'tasks'),
    invalid('a task without result', { tasks: [{ task_id: '0190f0f0-0000-7000-8000-000000000000', lease_id: 'l' }] }),
    invalid('a task id that is not a UUID', { tasks: [{ task_id: 'x', lease_id: 'l', result: { summary: 's' } }] }),
  ],
  'POST /agent/:id/task/:taskId/progress': [
    ...bodyCases({ lease_id: 'l', current_step: 's', steps_completed: 0, total_steps: 1 }),
    invalid('missing lease_id', { current_step: 's', steps_completed: 0, total_steps: 1 }, 'lease_id'),
    invalid('negative steps_completed', { lease_id: 'l', current_step: 's', steps_completed: -1, total_steps: 1 }),
    invalid('steps as a string', { lease_id: 'l', current_step: 's', steps_completed: '1', total_steps: 1 }),
  ],
  'POST /agent/:id/task/:taskId/input_request': [
    ...bodyCases({ lease_id: 'l', message: 'which?' }),
    invalid('missing message', { lease_id: 'l' }, 'message'),
    invalid('empty message', { lease_id: 'l', message: '' }, 'message'),
  ],
  'POST /agent/:id/task/:taskId/complete': [
    ...bodyCases({ lease_id: 'l', result: { summary: 's', findings: [] } }),
    invalid('missing result', { lease_id: 'l' }, 'result'),
    invalid('result without summary', { lease_id: 'l', result: { findings: [] } }, 'result.summary'),
    invalid('findings not an array', { lease_id: 'l', result: { summary: 's', findings: {} } }, 'result.findings'),
    invalid('finding with a negative line', {
      lease_id: 'l',
      result: { summary: 's', findings: [{ file: 'a', line: -1, severity: 'info', message: 'm' }] },
    }),
  ],
  'POST /agent/:id/task/:taskId/fail': [
    ...bodyCases({ lease_id: 'l', error: { message: 'm' } }),
    invalid('missing error', { lease_id: 'l' }, 'error'),
    invalid('empty error message', { lease_id: 'l', error: { message: '' } }, 'error.message'),
    invalid('lower-case error code', { lease_id: 'l', error: { code: 'oops', message: 'm' } }, 'error.code'),
    invalid('retryable as a string', { lease_id: 'l', error: { message: 'm' }, retryable: 'yes' }, 'retryable'),
  ],
  'POST /agent/:id/task/:taskId/release': [
    ...bodyCases({ lease_id: 'l' }),
    invalid('missing lease_id', {}, 'lease_id'),
  ],
  'GET /agent/:id/tasks': 'status=bogus limit=0 limit=101 page=0 page=x'.split(' ').map((query) => ({
    name: `query ${query}`,
    url: (ctx: RouteContext) => `/agent/${ctx.agent}/tasks?${query}`,
    field: query.split('=')[0],
    status: 400,
    code: 'INVALID_REQUEST',
  })),
  'POST /v1/agent/:id/triggers': [
    ...bodyCases({ name: 'n', message_template: 'm' }),
    ...TRIGGER_FIELD_CASES,
    invalid('missing name', { message_template: 'm' }, 'name'),
    invalid('missing message_template', { name: 'n' }, 'message_template'),
    invalid('uuid in the body', { name: 'n', message_template: 'm', uuid: randomUUID() }, 'uuid'),
  ],
  'PATCH /v1/agent/:id/triggers/:triggerId': [
    ...bodyCases({ name: 'n' }),
    ...TRIGGER_FIELD_CASES,
    invalid('enabled null', { enabled: null }, 'enabled'),
    invalid('uuid in the body', { uuid: randomUUID() }, 'uuid'),
  ],
  'POST /v1/agent/:id/triggers/:triggerId/rotate_secret': BODYLESS_CASES,
  'GET /v1/agent/:id/triggers': pageQueryCases((ctx) => `/v1/agent/${ctx.agent}/triggers`),
  'GET /v1/agent/:id/triggers/:triggerId/deliveries': pageQueryCases(
    (ctx) => `/v1/agent/${ctx.agent}/triggers/${ctx.trigger}/deliveries`,
  ),
  'POST /v1/agent/:id/schedules': [
    ...bodyCases({ name: 'n', cron: '@daily', message: 'm' }),
    invalid('missing cron', { name: 'n', message: 'm' }, 'cron'),
    invalid('cron a number', { name: 'n', cron: 5, message: 'm' }, 'cron'),
    invalid('bad cron', { name: 'n', cron: '0 0 L * *', message: 'm' }, 'cron'),
    invalid('offset zone', { name: 'n', cron: '@daily', message: 'm', timezone: '+02:00' }, 'timezone'),
    invalid('overlap bogus', { name: 'n', cron: '@daily', message: 'm', overlap: 'never' }, 'overlap'),
    invalid('unknown placeholder', { name: 'n', cron: '@daily', message: '{{payload}}' }, 'message'),
    invalid('priority 11', { name: 'n', cron: '@daily', message: 'm', priority: 11 }, 'priority'),
  ],
  'PATCH /v1/agent/:id/schedules/:scheduleId': [
    ...bodyCases({ name: 'n' }),
    invalid('enabled null', { enabled: null }, 'enabled'),
    invalid('catch_up_seconds too big', { catch_up_seconds: 604_801 }, 'catch_up_seconds'),
  ],
  'POST /v1/agent/:id/schedules/preview': [
    ...bodyCases({ cron: '@daily' }),
    invalid('count 0', { cron: '@daily', count: 0 }, 'count'),
    invalid('from without a zone', { cron: '@daily', from: '2026-01-01T00:00:00' }, 'from'),
  ],
  'POST /v1/agent/:id/schedules/:scheduleId/run': BODYLESS_CASES,
  'GET /v1/agent/:id/schedules': pageQueryCases((ctx) => `/v1/agent/${ctx.agent}/schedules`),
  'GET /v1/agent/:id/schedules/:scheduleId/runs': pageQueryCases(
    (ctx) => `/v1/agent/${ctx.agent}/schedules/${ctx.schedule}/runs`,
  ),
  'POST /agent/:id/task/:taskId/deliveries/:deliveryId/retry': BODYLESS_CASES,
  ...telemetryQueryCases(),
  'POST /user/provider_credentials': [
    ...bodyCases({ name: 'n', provider: 'openai', api_key: 'k' }),
    invalid('missing name', { provider: 'openai', api_key: 'k' }, 'name'),
    invalid('missing api_key', { name: 'n', provider: 'openai' }, 'api_key'),
    invalid('name with a slash', { name: 'a/b', provider: 'openai', api_key: 'k' }, 'name'),
    invalid('another provider', { name: 'n', provider: 'azure', api_key: 'k' }, 'provider'),
    invalid('base_url not a URL', { name: 'n', provider: 'openai', api_key: 'k', base_url: 'x' }, 'base_url'),
    invalid(
      'private base_url',
      { name: 'n', provider: 'openai', api_key: 'k', base_url: 'http://10.0.0.1' },
      'base_url',
    ),
  ],
  'PATCH /user/provider_credentials/:uuid': [
    ...bodyCases({ name: 'n' }),
    invalid('provider', { provider: 'openai' }, 'provider'),
    invalid('api_key empty', { api_key: '' }, 'api_key'),
    invalid('base_url with a query', { base_url: 'https://a.example/v1?x=1' }, 'base_url'),
  ],
  'PATCH /spotlight/budgets/account': [
    ...bodyCases({ monthly_usd: 1 }),
    invalid('a string limit', { monthly_usd: '5' }, 'monthly_usd'),
    invalid('a negative limit', { monthly_usd: -0.01 }, 'monthly_usd'),
    invalid('over a million', { monthly_usd: 1_000_001 }, 'monthly_usd'),
    invalid('another scope’s field', { daily_usd: 1 }, 'daily_usd'),
  ],
  'PATCH /spotlight/budgets/agents/:agentId': [
    ...bodyCases({ daily_usd: 1 }),
    invalid('a string limit', { per_task_usd: '0.5' }, 'per_task_usd'),
    invalid('another scope’s field', { monthly_usd: 1 }, 'monthly_usd'),
  ],
  'PATCH /spotlight/budgets/platform_keys/:keyUuid': [
    ...bodyCases({ monthly_usd: 1 }),
    invalid('a boolean limit', { monthly_usd: true }, 'monthly_usd'),
    invalid('another scope’s field', { per_task_usd: 1 }, 'per_task_usd'),
  ],
  'GET /spotlight/calls':
    'limit=0 limit=101 page=0 page=x task_id=x agent_uuid=1 provider_credential_uuid=z platform_key_uuid=k'
      .split(' ')
      .map((query) => ({
        name: `query ${query}`,
        url: () => `/spotlight/calls?${query}`,
        field: query.split('=')[0],
        status: 400,
        code: 'INVALID_REQUEST',
      })),
  'POST /spotlight/routes': [
    ...bodyCases({ name: 'r', targets: [] }),
    invalid('missing targets', { name: 'r' }, 'targets'),
    invalid('name with a colon', { name: 'a:b', targets: [] }, 'name'),
    invalid('no target', { name: 'r', targets: [] }, 'targets'),
    invalid(
      'unknown credential',
      { name: 'r', targets: [{ provider_credential_uuid: randomUUID(), model: 'm' }] },
      'targets[0].provider_credential_uuid',
    ),
    invalid(
      'cache_ttl_seconds 0',
      { name: 'r', targets: [{ provider_credential_uuid: 'x', model: 'm' }], cache_ttl_seconds: 0 },
      'cache_ttl_seconds',
    ),
  ],
  'PATCH /spotlight/routes/:uuid': [
    ...bodyCases({ name: 'n' }),
    invalid('repeated retry_on', { retry_on: ['5xx', '5xx'] }, 'retry_on'),
    invalid('unknown retry_on', { retry_on: ['4xx'] }, 'retry_on.0'),
    invalid(
      'bad target model',
      { targets: [{ provider_credential_uuid: randomUUID(), model: '' }] },
      'targets[0].provider_credential_uuid',
    ),
  ],
  'GET /workspaces/:id/audit_log': 'limit=0 limit=101 limit=abc limit=2.5 cursor=zzz cursor= action=nope action=agent'
    .split(' ')
    .map((query) => ({
      name: `query ${query}`,
      url: (ctx: { workspace: string }) => `/workspaces/${ctx.workspace}/audit_log?${query}`,
      field: query.split('=')[0],
      status: 400,
      code: 'INVALID_REQUEST',
    })),
  'GET /agent/list': 'limit=0 limit=101 limit=abc limit=-1 limit=2.5 limit= page=0 page=1.5 page=abc page=-1'
    .split(' ')
    .map((query) => ({
      name: `query ${query}`,
      url: () => `/agent/list?${query}`,
      field: query.split('=')[0],
      status: 400,
      code: 'INVALID_REQUEST',
    })),
};

/** The telemetry lists refuse bad ranges, limits, cursors and filters with the field named. */
function telemetryQueryCases(): Record<string, BadCase[]> {
  const cases = (path: string, queries: string) =>
    queries.split(' ').map((query) => ({
      name: `query ${query}`,
      url: () => `${path}?${query}`,
      field: query.split('=')[0],
      status: 400,
      code: 'INVALID_REQUEST',
    }));
  const common = 'limit=0 limit=101 limit=abc from=yesterday to=2026-01-01T00:00:00 cursor=nope';
  return {
    'GET /telemetry/fetch_traces': cases('/telemetry/fetch_traces', `${common} status=bad`),
    'GET /telemetry/fetch_logs': cases(
      '/telemetry/fetch_logs',
      `${common} severity_min=0 severity_min=25 trace_id=xyz`,
    ),
    'GET /telemetry/fetch_usage': cases('/telemetry/fetch_usage', 'group_by=week from=nope'),
  };
}

/** Ids that do not have the shape of the kind: not UUIDs, or not 32 hex characters for a trace. */
function badIds(kind: IdKind): string[] {
  if (kind === 'trace') return ['not-hex', '123', randomUUID(), `${'a'.repeat(32)}0`];
  return ['not-a-uuid', '123', randomUUID().replaceAll('-', ''), `${randomUUID()}x`];
}

/** Every route that names an id answers 400 for ids that are not of its shape. */
function badIdCases(route: CatalogueRoute): BadCase[] {
  const params = (route.path.match(/:[A-Za-z]+/g) ?? []).map((p) => p.slice(1));
  return (route.ids ?? []).flatMap((kind, i) =>
    badIds(kind).map((bad) => ({
      name: `${kind} id ${bad}`,
      url: (ctx: RouteContext) => route.url({ ...ctx, [kind]: bad }),
      field: params[i],
      status: 400,
      code: 'INVALID_REQUEST',
    })),
  );
}

function send(t: TestApp, route: CatalogueRoute, ctx: RouteContext, c: BadCase, token: string) {
  const body = c.body ?? route.body?.(ctx);
  const payload = c.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const headers: Record<string, string> = { ...bearer(token) };
  if (payload !== undefined && c.contentType !== '') headers['content-type'] = c.contentType ?? 'application/json';
  return t.app.inject({ method: route.method, url: c.url ? c.url(ctx) : route.url(ctx), headers, payload });
}

function expectRefused(res: LightMyRequestResponse, c: BadCase) {
  expect({ case: c.name, status: res.statusCode, body: res.body }).toMatchObject({ case: c.name, status: c.status });
  expectErrorEnvelope(res, c.status, c.code, c.field);
}

// The model proxy answers bad input in OpenAI's shape: test/modules/spotlight covers it.
const GENERIC_ROUTES = ROUTES.filter((route) => route.protocol === undefined);

const TABLE = GENERIC_ROUTES.map((route) => ({
  key: routeKey(route),
  route,
  cases: [...(CASES[routeKey(route)] ?? []), ...badIdCases(route)],
})).filter((entry) => entry.cases.length > 0);

describe.each(DATABASES)('bad input on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('has a case table for every route that takes a body or a query (ids are generated)', () => {
    const takesInput = (r: CatalogueRoute) =>
      r.method === 'POST' || r.method === 'PATCH' || r.method === 'PUT' || r.url.toString().includes('?');
    expect(
      GENERIC_ROUTES.filter(takesInput)
        .map(routeKey)
        .filter((key) => !CASES[key]),
    ).toEqual([]);
    expect(Object.keys(CASES).filter((key) => !ROUTES.some((r) => routeKey(r) === key))).toEqual([]);
  });

  it.each(TABLE)('$key refuses each malformed request with the documented envelope', async ({ route, cases }) => {
    const user = await createUser(t);
    const { ctx } = await createRouteContext(t, user);
    for (const c of cases) expectRefused(await send(t, route, ctx, c, user.token), c);
    // The valid example still succeeds afterwards: the refusals were about the input.
    const ok = route.stream
      ? await sendRoute(t, route, ctx, bearer(user.token))
      : await send(t, route, ctx, { name: 'valid example', status: 0, code: '' }, user.token);
    expect({ status: ok.statusCode, body: ok.body }).toMatchObject({ status: route.status });
  });

  it('answers unknown routes and methods with 404 NOT_FOUND', async () => {
    const user = await createUser(t);
    for (const [method, url] of [
      ['GET', '/nope'],
      ['POST', '/nope'],
      ['DELETE', '/agent'],
      ['PUT', `/agent/${randomUUID()}`],
      ['GET', `/agent/${randomUUID()}/nope`],
    ] as const) {
      const res = await call(t.app, method, url, { token: user.token, body: method === 'GET' ? undefined : {} });
      expectErrorEnvelope(res, 404, 'NOT_FOUND');
    }
  });

  it('leaves nothing behind after a refused write', async () => {
    const user = await createUser(t);
    const agents = () => call(t.app, 'GET', '/agent/list', { token: user.token }).then((r) => r.json());
    for (const c of [...AGENT_FIELD_CASES, ...bodyCases({ name: 'a' })]) {
      expectRefused(await send(t, byKey('POST /agent'), {} as RouteContext, c, user.token), c);
    }
    expect((await agents()).pagination.total).toBe(0);

    const agent = await createAgent(t, user, { name: 'kept' });
    const before = (await call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token })).json();
    const patch = await call(t.app, 'PATCH', `/agent/${agent.uuid}`, {
      token: user.token,
      body: { name: 'changed', status: 'paused', concurrency: 0 },
    });
    expectErrorEnvelope(patch, 400, 'INVALID_REQUEST', 'concurrency');
    expect((await call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token })).json()).toEqual(before);
    expect((await agents()).pagination.total).toBe(1);

    const keys = () => call(t.app, 'GET', '/auth/platform_keys', { token: user.token }).then((r) => r.json().keys);
    const keyCount = (await keys()).length;
    for (const body of [{ name: '' }, { name: 'k', extra: true }, { name: 5 }]) {
      expect((await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body })).statusCode).toBe(400);
    }
    expect(await keys()).toHaveLength(keyCount);

    const short = await call(t.app, 'POST', '/auth/change_password', {
      token: user.token,
      body: { current_password: user.password, new_password: 'short' },
    });
    expectErrorEnvelope(short, 400, 'INVALID_REQUEST', 'new_password');
    expect((await call(t.app, 'GET', '/agent/list', { token: user.token })).statusCode).toBe(200);
    const login = await call(t.app, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    expect(login.statusCode).toBe(200);
  });

  describe('with a 2 KB body limit', () => {
    let small: TestApp;

    beforeAll(async () => {
      small = await buildTestApp(database, { config: { maxBodyBytes: 2048 } });
    });
    afterAll(() => small.close());

    it('answers 413 PAYLOAD_TOO_LARGE to a 4 KB body on every route that takes one', async () => {
      const user = await createUser(small);
      const { ctx } = await createRouteContext(small, user);
      const routes = [...GENERIC_ROUTES.filter((r) => r.body), byKey('POST /auth/generate_ingest_token')];
      for (const route of routes) {
        const c: BadCase = {
          name: 'a 4 KB body',
          raw: JSON.stringify({ name: long(4096) }),
          status: 413,
          code: 'PAYLOAD_TOO_LARGE',
        };
        expectRefused(await send(small, route, ctx, c, user.token), c);
      }
      expect((await call(small.app, 'GET', '/agent/list', { token: user.token })).json().pagination.total).toBe(1);
      const fits = await call(small.app, 'POST', '/agent', {
        token: user.token,
        body: { name: 'fits', description: long(1500) },
      });
      expect(fits.statusCode).toBe(201);
    });
  });

  it('refuses JSON nested deeper than 64 levels with 400 INVALID_REQUEST, however deep', async () => {
    const user = await createUser(t);
    for (const depth of [65, 300_000]) {
      const res = await call(t.app, 'POST', '/agent', {
        token: user.token,
        headers: { 'content-type': 'application/json' },
        body: `{"name":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'body' } });
    }
    // 64 levels (the object itself counts as one) parse and reach validation.
    const res = await call(t.app, 'POST', '/agent', {
      token: user.token,
      headers: { 'content-type': 'application/json' },
      body: `{"name":"deep","metadata_x":${'['.repeat(63)}${']'.repeat(63)}}`,
    });
    expect(res.json().error.message).not.toMatch(/deeper/);
  });

  it('accepts JSON with a charset parameter (positive control for the 415 cases)', async () => {
    const user = await createUser(t);
    const res = await call(t.app, 'POST', '/agent', {
      token: user.token,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: { name: 'charset' },
    });
    expect(res.statusCode).toBe(201);
  });

  it('accepts an absent, null or empty body on operations that take none', async () => {
    const user = await createUser(t);
    const { ctx } = await createRouteContext(t, user);
    for (const route of GENERIC_ROUTES.filter((r) => r.method === 'POST' && !r.body)) {
      for (const text of [undefined, '', 'null', '{}']) {
        const res = await send(t, route, ctx, { name: `body ${text}`, raw: text, status: 0, code: '' }, user.token);
        const seen = { route: routeKey(route), body: text };
        expect({ ...seen, status: res.statusCode }).toEqual({ ...seen, status: route.status });
      }
    }
  });
});
