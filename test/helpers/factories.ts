import { randomUUID } from 'node:crypto';
import type { Acting } from '../../src/lib/principal.js';
import type { TestApp } from './app.js';
import { call } from './app.js';

export interface TestUser {
  uuid: string;
  email: string;
  password: string;
  /** A session JWT from POST /auth/login. */
  token: string;
  /** A platform key created through the API. */
  key: string;
  keyUuid: string;
}

/** A unique e-mail address, so tests on a shared database never collide. */
export function uniqueEmail(): string {
  return `user-${randomUUID()}@example.test`;
}

/** A verified user with a session token and a platform key, made through the real service and API. */
export async function createUser(t: TestApp, opts: { agentsEnabled?: boolean } = {}): Promise<TestUser> {
  const email = uniqueEmail();
  const password = `pw-${randomUUID()}`;
  const user = await t.accounts.createUser({
    email,
    password,
    verified: true,
    agentsEnabled: opts.agentsEnabled ?? true,
  });
  const login = await call(t.app, 'POST', '/auth/login', { body: { email, password } });
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`);
  const token = login.json().token as string;
  const created = await call(t.app, 'POST', '/auth/platform_keys', { token, body: { name: 'test key' } });
  if (created.statusCode !== 201) throw new Error(`key creation failed: ${created.body}`);
  return { uuid: user.uuid, email, password, token, key: created.json().key, keyUuid: created.json().uuid };
}

/** An agent of the user, created through the API. */
export async function createAgent(t: TestApp, user: TestUser, body: Record<string, unknown> = {}) {
  const res = await call(t.app, 'POST', '/agent', { token: user.token, body: { name: 'test agent', ...body } });
  if (res.statusCode !== 201) throw new Error(`agent creation failed: ${res.body}`);
  return res.json() as { uuid: string; status: string; concurrency: number };
}

/** A user acting in their personal workspace from no request (as the CLI does): for service calls. */
export function actingAs(user: { uuid: string; email: string }): Acting {
  return {
    workspaceUuid: user.uuid,
    actor: { type: 'user', uuid: user.uuid, email: user.email },
    ip: null,
    requestId: null,
    clientRequestId: null,
  };
}
