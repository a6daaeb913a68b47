import { createHash, randomBytes } from 'node:crypto';
import { call, type TestApp } from '../../helpers/app.js';
import type { TestUser } from '../../helpers/factories.js';

/** A PKCE pair (RFC 7636, S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A form POST to the server (the token and revocation endpoints). */
export function postForm(
  baseUrl: string,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

/** GET without following redirects; answers the status and Location. */
export async function getManual(url: string) {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

/** The query of a redirect as an object. */
export function queryOf(location: string | null): Record<string, string> {
  return Object.fromEntries(new URL(location ?? 'http://invalid/').searchParams);
}

export const LOOPBACK_REDIRECT = 'http://127.0.0.1:4567/callback';

/** A form POST through the app's real stack (no listening server). */
export function injectForm(
  t: TestApp,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return t.app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(form).toString(),
  });
}

/** A public client (auth method none, code and refresh grants) registered by DCR. */
export async function registerPublicClient(t: TestApp, name = 'Test client'): Promise<string> {
  const res = await call(t.app, 'POST', '/oauth/register', {
    body: {
      client_name: name,
      redirect_uris: [LOOPBACK_REDIRECT],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    },
  });
  if (res.statusCode !== 201) throw new Error(`registration failed: ${res.body}`);
  return res.json().client_id;
}

/** Authorizes `clientId` and answers the consent as `user`; the code and its verifier. */
export async function approveFor(
  t: TestApp,
  user: TestUser,
  opts: { clientId: string; workspaceUuid?: string; role?: 'viewer' | 'member' },
) {
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: opts.clientId,
    redirect_uri: LOOPBACK_REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const authorize = await call(t.app, 'GET', `/oauth/authorize?${query}`);
  if (authorize.statusCode !== 302) throw new Error(`authorize failed: ${authorize.body}`);
  const requestId = queryOf(String(authorize.headers.location)).request_id ?? '';
  const approved = await call(t.app, 'POST', `/oauth/authorization_requests/${requestId}/approve`, {
    token: user.token,
    body: { workspace_uuid: opts.workspaceUuid ?? user.uuid, role: opts.role ?? 'member' },
  });
  if (approved.statusCode !== 200) throw new Error(`approve failed: ${approved.body}`);
  return { code: queryOf(approved.json().redirect_to).code ?? '', verifier };
}

/** Exchanges a code of a public client for tokens (the raw answer). */
export function exchange(t: TestApp, clientId: string, got: { code: string; verifier: string }) {
  return injectForm(t, '/oauth/token', {
    grant_type: 'authorization_code',
    code: got.code,
    redirect_uri: LOOPBACK_REDIRECT,
    code_verifier: got.verifier,
    client_id: clientId,
  });
}

/** Registers a client, consents as `user` and exchanges the code: the client and its tokens. */
export async function connectClient(
  t: TestApp,
  user: TestUser,
  opts: { workspaceUuid?: string; role?: 'viewer' | 'member' } = {},
) {
  const clientId = await registerPublicClient(t);
  const res = await exchange(t, clientId, await approveFor(t, user, { clientId, ...opts }));
  if (res.statusCode !== 200) throw new Error(`token exchange failed: ${res.body}`);
  const tokens = res.json() as { access_token: string; refresh_token: string };
  return { clientId, ...tokens };
}

const MODERN = '2026-07-28';

/**
 * A 2026-07-28 request to /mcp with `token` as bearer (none when empty; the tasks extension declared, so an agent
 * tool's call answers its task at once); the HTTP status and the JSON-RPC answer.
 */
export async function modernMcp(t: TestApp, token: string, method: string, params: Record<string, unknown> = {}) {
  const name =
    method === 'tools/call' ? String(params.name) : method.startsWith('tasks/') ? String(params.taskId) : undefined;
  const res = await t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
    },
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
      },
    }),
  });
  const body = res.body ? JSON.parse(res.body) : null;
  return { status: res.statusCode, headers: res.headers, body };
}
