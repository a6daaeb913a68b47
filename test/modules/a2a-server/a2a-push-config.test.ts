import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resealAll } from '../../../src/cli/reseal.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { keyIn } from '../workspaces/workspace-helpers.js';
import { a2aRpc, type Json, userMessage } from './a2a-rpc.js';

const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

/** Push notification configs (create, get, list, delete) on both bindings; private URLs refused. */
describe.each(DATABASES)('A2A push notification configs on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agentId: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // Storage of its own: the notifications queued here are this app's alone to (fail to) send.
    const own = await ownDatabase(database);
    drop = own.drop;
    // Notifications queued here go nowhere: names resolve to nothing (no DNS leaves the machine).
    const lookup = async () => {
      throw Object.assign(new Error('not resolved in tests'), { code: 'ENOTFOUND' });
    };
    t = await buildTestApp(own.database, { config: { allowPrivateUrls: false }, lookup });
    user = await createUser(t);
    agentId = (await createAgent(t, user)).uuid;
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  const rpc = () => a2aRpc(t, user, agentId);

  function rest(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object, key = user.key) {
    const headers: Record<string, string> = { 'x-api-key': key, 'a2a-version': '1.0' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return t.app.inject({
      method,
      url: `/a2a/${agentId}${path}`,
      headers,
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  const newTask = async () => {
    const res = await rpc().rpc('SendMessage', {
      message: userMessage('push me'),
      configuration: { returnImmediately: true },
    });
    return res.result.task as Json;
  };

  /** The BadRequest field of a JSON-RPC -32602. */
  async function badField(method: string, params: unknown): Promise<string> {
    const res = await rpc().rpc(method, params);
    expect(res.error?.code, JSON.stringify(res)).toBe(-32602);
    return res.error?.data.find((d: Json) => d['@type'] === BAD_REQUEST).fieldViolations[0].field;
  }

  it('creates, gets, lists, replaces and deletes configs across both bindings, secrets masked', async () => {
    const task = await newTask();
    const created = await rpc().rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      url: 'https://example.com/hook?x=1',
      token: 'tok-secret',
      authentication: { scheme: 'Bearer', credentials: 'cred-secret' },
      tenant: 'ignored',
    });
    const config = created.result;
    expect(config).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      taskId: task.id,
      url: 'https://example.com/hook?x=1',
      token: '********',
      authentication: { scheme: 'Bearer', credentials: '********' },
    });
    const overRest = await rest('POST', `/tasks/${task.id}/pushNotificationConfigs`, {
      id: 'second.one',
      url: 'https://example.org/h',
    });
    expect(overRest.statusCode).toBe(201);
    expect(overRest.headers['content-type']).toMatch(/^application\/a2a\+json/);
    expect(overRest.json()).toEqual({ id: 'second.one', taskId: task.id, url: 'https://example.org/h' });

    const got = await rest('GET', `/tasks/${task.id}/pushNotificationConfigs/${config.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual(config);
    expect((await rpc().rpc('GetTaskPushNotificationConfig', { taskId: task.id, id: 'second.one' })).result).toEqual(
      overRest.json(),
    );

    // Replacing an id keeps its place in the order; the list is one page.
    const replaced = await rpc().rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      id: config.id,
      url: 'https://example.com/other',
    });
    expect(replaced.result).toEqual({ id: config.id, taskId: task.id, url: 'https://example.com/other' });
    const listed = (await rest('GET', `/tasks/${task.id}/pushNotificationConfigs?pageSize=1&pageToken=x`)).json();
    expect(listed).toEqual({ configs: [replaced.result, overRest.json()], nextPageToken: '' });
    expect((await rpc().rpc('ListTaskPushNotificationConfigs', { taskId: task.id })).result).toEqual(listed);

    const deleted = await rest('DELETE', `/tasks/${task.id}/pushNotificationConfigs/second.one`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    // Idempotent: an unknown id of a known task is the same success.
    expect((await rpc().rpc('DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'second.one' })).result).toEqual(
      {},
    );
    const gone = await rest('GET', `/tasks/${task.id}/pushNotificationConfigs/second.one`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.details[0].reason).toBe('TASK_NOT_FOUND');
    expect((await rpc().rpc('ListTaskPushNotificationConfigs', { taskId: task.id })).result.configs).toHaveLength(1);
  });

  it('answers TaskNotFound for another agent’s task or no task, on every method', async () => {
    const other = (await createAgent(t, user)).uuid;
    const foreign = (
      await a2aRpc(t, user, other).rpc('SendMessage', {
        message: userMessage('elsewhere'),
        configuration: { returnImmediately: true },
      })
    ).result.task;
    for (const taskId of [foreign.id, 'nonexistent-task-id']) {
      const a = rpc();
      expect(await a.errorCode('CreateTaskPushNotificationConfig', { taskId, url: 'https://example.com/h' })).toBe(
        -32001,
      );
      expect(await a.errorCode('GetTaskPushNotificationConfig', { taskId, id: 'a' })).toBe(-32001);
      expect(await a.errorCode('ListTaskPushNotificationConfigs', { taskId })).toBe(-32001);
      expect(await a.errorCode('DeleteTaskPushNotificationConfig', { taskId, id: 'a' })).toBe(-32001);
      expect(
        (await rest('POST', `/tasks/${taskId}/pushNotificationConfigs`, { url: 'https://example.com/h' })).statusCode,
      ).toBe(404);
    }
  });

  it('refuses invalid fields naming them, private addresses, and an 11th config', async () => {
    const task = await newTask();
    const create = (extra: Record<string, unknown>) =>
      badField('CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://example.com/h', ...extra });
    expect(await badField('CreateTaskPushNotificationConfig', { url: 'https://example.com/h' })).toBe('taskId');
    expect(await create({ url: undefined })).toBe('url');
    expect(await create({ url: 'ftp://example.com/x' })).toBe('url');
    expect(await create({ url: 'https://u:p@example.com/x' })).toBe('url');
    expect(await create({ url: `https://example.com/${'a'.repeat(2048)}` })).toBe('url');
    for (const url of [
      'http://127.0.0.1/h',
      'http://localhost:8080/h',
      'http://a.localhost/h',
      'http://[::1]/h',
      'http://2130706433/h',
      'http://10.1.2.3/h',
      'http://169.254.169.254/latest',
    ]) {
      expect(await create({ url })).toBe('url');
    }
    expect(await create({ id: 'has space' })).toBe('id');
    expect(await create({ id: 'x'.repeat(129) })).toBe('id');
    expect(await create({ token: 'line\nbreak' })).toBe('token');
    expect(await create({ token: 't'.repeat(4097) })).toBe('token');
    expect(await create({ authentication: { credentials: 'x' } })).toBe('authentication.scheme');
    expect(await create({ authentication: { scheme: 'Bad Scheme', credentials: 'x' } })).toBe('authentication.scheme');
    expect(await create({ authentication: { scheme: 'Basic', credentials: '' } })).toBe('authentication.credentials');
    // HTTP+JSON: the body's taskId must be the path's; an empty body fails validation.
    const mismatch = await rest('POST', `/tasks/${task.id}/pushNotificationConfigs`, {
      taskId: randomUUID(),
      url: 'https://example.com/h',
    });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json().error.details[0].fieldViolations[0].field).toBe('taskId');
    expect((await rest('POST', `/tasks/${task.id}/pushNotificationConfigs`)).statusCode).toBe(400);

    for (let i = 0; i < 10; i++) {
      const res = await rpc().rpc('CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: `c${i}`,
        url: 'https://example.com/h',
      });
      expect(res.result?.id).toBe(`c${i}`);
    }
    const eleventh = await rpc().rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      id: 'c10',
      url: 'https://example.com/h',
    });
    expect(eleventh.error?.code).toBe(-32602);
    expect(eleventh.error?.message).toMatch(/10/);
    // Replacing an existing id is always allowed.
    const again = await rpc().rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      id: 'c3',
      url: 'https://example.net/h',
    });
    expect(again.result.url).toBe('https://example.net/h');
    expect((await rpc().rpc('ListTaskPushNotificationConfigs', { taskId: task.id })).result.configs).toHaveLength(10);
  });

  it('stores a config sent with SendMessage in the same commit; an invalid one makes nothing', async () => {
    const message = userMessage('with push');
    const sent = await rpc().rpc('SendMessage', {
      message,
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: { id: 'withsend', url: 'https://example.com/h', token: 'abc' },
      },
    });
    const task = sent.result.task;
    const listed = (await rpc().rpc('ListTaskPushNotificationConfigs', { taskId: task.id })).result.configs;
    expect(listed).toEqual([{ id: 'withsend', taskId: task.id, url: 'https://example.com/h', token: '********' }]);

    const before = (await rpc().rpc('ListTasks', { pageSize: 100 })).result.totalSize;
    const refused = await rpc().rpc('SendMessage', {
      message: userMessage('bad push'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: 'http://127.0.0.1/h' } },
    });
    expect(refused.error?.code).toBe(-32602);
    expect(refused.error?.data[0].fieldViolations[0].field).toBe('configuration.taskPushNotificationConfig.url');
    const missing = await rpc().rpc('SendMessage', {
      message: userMessage('no url'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { token: 'x' } },
    });
    expect(missing.error?.data[0].fieldViolations[0].field).toBe('configuration.taskPushNotificationConfig.url');
    expect((await rpc().rpc('ListTasks', { pageSize: 100 })).result.totalSize).toBe(before);
  });

  it('needs member to create and delete, viewer to get and list', async () => {
    const task = await newTask();
    // A viewer's key in the owner's personal workspace.
    const viewer = await keyIn(t, user, user.uuid, 'viewer');
    const asViewer = (method: 'GET' | 'POST' | 'DELETE', path: string, body?: object) =>
      rest(method, path, body, viewer.key);
    const base = `/tasks/${task.id}/pushNotificationConfigs`;
    expect((await asViewer('POST', base, { url: 'https://example.com/h' })).statusCode).toBe(403);
    expect((await asViewer('DELETE', `${base}/x`)).statusCode).toBe(403);
    expect((await asViewer('GET', base)).statusCode).toBe(200);
    expect((await asViewer('GET', `${base}/x`)).statusCode).toBe(404);
    const viaRpc = await a2aRpc(t, viewer, agentId).raw(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params: {} }),
    );
    expect(viaRpc.statusCode).toBe(403);
  });

  // Last in the file: after it the stored secrets are under a key this app does not hold.
  it('keeps token and credentials sealed, and `secret reseal` re-seals them under a new key', async () => {
    await rpc().rpc('SendMessage', {
      message: userMessage('sealed'),
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: {
          url: 'https://example.com/h',
          token: 'plain-token',
          authentication: { scheme: 'Basic', credentials: 'plain-cred' },
        },
      },
    });
    const ex = t.runtime.db.kysely;
    const stored = async () => ({
      configs: await ex.selectFrom('a2a_push_configs').select(['token', 'auth_credentials']).execute(),
      deliveries: await ex
        .selectFrom('callbacks')
        .select('secret_headers')
        .where('push_config_uuid', 'is not', null)
        .execute(),
    });
    const before = await stored();
    expect(JSON.stringify(before)).not.toMatch(/plain-token|plain-cred/);
    const next = 'n'.repeat(40);
    const { encryptionKey, previousEncryptionKeys } = t.runtime.secrets;
    const result = await resealAll(t.runtime.db, createSecretBox(next, [encryptionKey, ...previousEncryptionKeys]));
    expect(result.unreadable).toBe(0);
    const onlyNew = createSecretBox(next, []);
    const after = await stored();
    const config = after.configs.find((c) => c.auth_credentials !== null);
    expect(onlyNew.open(config?.token ?? '')).toBe('plain-token');
    expect(onlyNew.open(config?.auth_credentials ?? '')).toBe('plain-cred');
    const headers = after.deliveries.map((d) => JSON.parse(onlyNew.open(d.secret_headers ?? '')));
    expect(headers).toContainEqual({ authorization: 'Basic plain-cred', 'x-a2a-notification-token': 'plain-token' });
  });
});
