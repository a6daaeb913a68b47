import type { LightMyRequestResponse } from 'fastify';
import type { TriggerView } from '../../src/modules/triggers/triggers-schemas.js';
import { call, type TestApp } from './app.js';
import type { TestUser } from './factories.js';
import { workerHeaders } from './tasks.js';

export type CreatedTrigger = TriggerView & { webhook_secret: string };

/** POST /v1/agent/:id/triggers with the user's platform key; throws unless 201. */
export async function createTrigger(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  body: Record<string, unknown> = {},
): Promise<CreatedTrigger> {
  const res = await call(t.app, 'POST', `/v1/agent/${agentUuid}/triggers`, {
    headers: workerHeaders(user),
    body: { name: 'test trigger', message_template: 'Review {{payload.repository.name}}', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`trigger creation failed: ${res.body}`);
  return res.json();
}

/** PATCH a trigger or its agent with the owner's platform key; throws unless 200. */
export async function patchAs(t: TestApp, user: TestUser, url: string, body: Record<string, unknown>) {
  const res = await call(t.app, 'PATCH', url, { headers: workerHeaders(user), body });
  if (res.statusCode !== 200) throw new Error(`PATCH ${url} failed: ${res.body}`);
  return res.json();
}

export interface Delivery {
  /** Sent as it is when a string or Buffer; otherwise as JSON text. */
  body?: unknown;
  /** Content type; application/json unless given, none when null. */
  contentType?: string | null;
  /** X-Webhook-Secret. */
  secret?: string;
  /** X-Hub-Signature-256. */
  signature?: string;
  headers?: Record<string, string>;
  remoteAddress?: string;
}

/** The raw bytes of a delivery body. */
export function rawBody(body: unknown): string | Buffer {
  return typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body ?? {});
}

/** POST /v1/webhooks/triggers/:uuid, as an external system sends it (no user credential). */
export function deliver(t: TestApp, triggerUuid: string, d: Delivery = {}): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...d.headers };
  if (d.contentType !== null) headers['content-type'] = d.contentType ?? 'application/json';
  if (d.secret !== undefined) headers['x-webhook-secret'] = d.secret;
  if (d.signature !== undefined) headers['x-hub-signature-256'] = d.signature;
  return t.app.inject({
    method: 'POST',
    url: `/v1/webhooks/triggers/${triggerUuid}`,
    headers,
    payload: rawBody(d.body),
    ...(d.remoteAddress ? { remoteAddress: d.remoteAddress } : {}),
  });
}
