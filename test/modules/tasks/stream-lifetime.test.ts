import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualTimers, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { actingAs, createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listen, openRawStream } from '../../helpers/streams.js';
import { submitTask, workerHeaders } from '../../helpers/tasks.js';

/*
 * A task event stream sends a comment line every 15 s and ends once its credential no longer
 * holds: a revoked key, a changed password. The app's repeating timers are fired by hand, so
 * "15 s" is exact and nothing sleeps.
 */

const HEARTBEAT_MS = 15_000;
const heartbeats = (text: string) => text.split('\n').filter((line) => line.startsWith(':')).length;

describe.each(DATABASES)('event stream lifetime on $name', (database) => {
  let t: TestApp;
  let base: string;
  const timers = manualTimers();
  const streams: Array<{ close(): void }> = [];

  // No credential cache: on PostgreSQL the cache's LISTEN would also end streams at once on a change
  // made elsewhere; here only the periodic check may catch those.
  beforeAll(async () => {
    t = await buildTestApp(database, { timers, config: { credentialCacheMs: 0 } });
    base = await listen(t);
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await t.close();
  });

  async function openTaskStream(headers?: (user: TestUser) => Record<string, string>) {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const path = `/agent/${agent}/task/${task_id}/events`;
    const stream = await openRawStream(base, path, (headers ?? workerHeaders)(user));
    streams.push(stream);
    expect(stream.res.status).toBe(200);
    // The first event is written after the stream's timers are set.
    await stream.until((text) => text.includes('event: task'), 'the first event');
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(1);
    return { user, stream };
  }

  it('sends a comment line every 15 s while nothing happens', async () => {
    const { stream } = await openTaskStream();
    const before = heartbeats(stream.text);
    timers.advance(HEARTBEAT_MS - 1);
    timers.advance(1);
    await stream.until((text) => heartbeats(text) === before + 1, 'a comment line after 15 s');
    timers.advance(2 * HEARTBEAT_MS);
    await stream.until((text) => heartbeats(text) === before + 3, 'two more comment lines after 30 s more');
    expect(stream.text).toContain('\n: keep-alive\n\n');
    stream.close();
  });

  it('ends at once when its platform key is revoked through the API, and frees its slot', async () => {
    const { user, stream } = await openTaskStream();
    const res = await call(t.app, 'DELETE', `/auth/platform_keys/${user.keyUuid}`, { token: user.token });
    expect(res.statusCode).toBe(204);
    await stream.ended();
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(0);
  });

  it('ends at the next check (within 15 s) when its key is revoked outside this server', async () => {
    const { user, stream } = await openTaskStream();
    // Revoked through another instance of the service (as the CLI or another server would): this
    // server hears nothing.
    await t.accounts.revokePlatformKey(actingAs(user), user.keyUuid);
    timers.advance(HEARTBEAT_MS);
    await stream.ended();
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(0);
  });

  it("ends when the user's password changes if it was opened with a session; a stream opened with a key stays open", async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const path = `/agent/${agent}/task/${task_id}/events`;
    const byKey = await openRawStream(base, path, workerHeaders(user));
    const bySession = await openRawStream(base, path, { authorization: `Bearer ${user.token}` });
    streams.push(byKey, bySession);
    await byKey.until((text) => text.includes('event: task'), 'the first event');
    await bySession.until((text) => text.includes('event: task'), 'the first event');

    await t.accounts.changePassword(user.uuid, user.password, 'a-new-password-123');
    timers.advance(HEARTBEAT_MS);
    await bySession.ended();
    // A password change does not affect platform keys: the key's stream goes on past more checks.
    const before = heartbeats(byKey.text);
    timers.advance(HEARTBEAT_MS);
    await byKey.until((text) => heartbeats(text) > before, 'a comment line after the password change');
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(1);
    byKey.close();
  });

  it('stays open across checks while its own credential holds, another key of the user being revoked', async () => {
    const { user, stream } = await openTaskStream();
    const created = await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: { name: 'other' } });
    expect(created.statusCode).toBe(201);
    // The revocation is a change to the user's credentials: the stream checks its own at once.
    const revoked = await call(t.app, 'DELETE', `/auth/platform_keys/${created.json().uuid}`, { token: user.token });
    expect(revoked.statusCode).toBe(204);
    for (let tick = 1; tick <= 3; tick++) {
      const before = heartbeats(stream.text);
      timers.advance(HEARTBEAT_MS);
      await stream.until((text) => heartbeats(text) > before, `comment line ${tick} after the revocation`);
    }
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(1);
    stream.close();
  });

  it('an A2A stream (SubscribeToTask) keeps the same rules: comment lines, and it ends when its key is revoked', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const stream = await openRawStream(
      base,
      `/a2a/${agent}`,
      { ...workerHeaders(user), 'a2a-version': '1.0' },
      { jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: task_id } },
    );
    streams.push(stream);
    expect(stream.res.status).toBe(200);
    await stream.until((text) => text.includes('"task"'), 'the first event');
    const before = heartbeats(stream.text);
    timers.advance(HEARTBEAT_MS);
    await stream.until((text) => heartbeats(text) === before + 1, 'a comment line after 15 s');
    await t.accounts.revokePlatformKey(actingAs(user), user.keyUuid);
    timers.advance(HEARTBEAT_MS);
    await stream.ended();
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(0);
  });
});
