import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../../helpers/app.js';
import type { TestUser } from '../../helpers/factories.js';

// biome-ignore lint/suspicious/noExplicitAny: results are read field by field against the A2A wire format.
export type Json = any;

/** Raw JSON-RPC calls to an agent's A2A endpoint through the real Fastify stack. */
export function a2aRpc(t: TestApp, user: TestUser, agentUuid: string) {
  let next = 1;
  async function raw(body: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    const all = { 'x-api-key': user.key, 'content-type': 'application/json', 'a2a-version': '1.0', ...headers };
    // An empty value leaves the header out.
    const sent = Object.fromEntries(Object.entries(all).filter(([, value]) => value !== ''));
    return t.app.inject({ method: 'POST', url: `/a2a/${agentUuid}`, headers: sent, payload: body });
  }
  /** Calls `method` and returns the JSON-RPC response (the HTTP status must be 200). */
  async function rpc(method: string, params?: unknown, headers: Record<string, string> = {}) {
    const id = next++;
    const res = await raw(JSON.stringify({ jsonrpc: '2.0', id, method, params }), headers);
    if (res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode}: ${res.body}`);
    const body = res.json();
    if (body.id !== id) throw new Error(`${method}: answered id ${body.id}, expected ${id}`);
    return body as { result?: Json; error?: { code: number; message: string; data?: Json } };
  }
  return {
    raw,
    rpc,
    /** The error code `method` answers with (throws when it succeeds). */
    async errorCode(method: string, params?: unknown, headers: Record<string, string> = {}): Promise<number> {
      const body = await rpc(method, params, headers);
      if (!body.error) throw new Error(`${method}: expected an error, got ${JSON.stringify(body.result)}`);
      return body.error.code;
    },
  };
}

/** A user message in ProtoJSON, with a new messageId unless one is given. */
export function userMessage(text: string, extra: Record<string, unknown> = {}) {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra };
}
