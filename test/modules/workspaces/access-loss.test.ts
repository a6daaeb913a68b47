import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { listen, openRawStream } from '../../helpers/streams.js';
import { captureLog, createWorkspace, join, keyIn, WORKSPACE_HEADER } from './workspace-helpers.js';

/**
 * What is open when access goes: a member's event stream on the team ends when they are removed;
 * a long-poll claim of a key whose creator is demoted to viewer answers at once with nothing.
 */
describe.each(DATABASES)('connections that lose their access to a workspace on $name', (database) => {
  let t: TestApp;
  let base: string;
  let logged: Array<Record<string, unknown>>;
  const closers: Array<{ close(): void }> = [];

  beforeAll(async () => {
    t = await buildTestApp(database);
    logged = captureLog(t);
    base = await listen(t);
  });
  afterAll(async () => {
    for (const c of closers) c.close();
    await t.close();
  });

  async function team(role: 'member' | 'admin' = 'member') {
    const [owner, member] = [await createUser(t), await createUser(t)];
    const ws = (await createWorkspace(t, owner)).uuid;
    await join(t, logged, ws, owner, member, role);
    const headers = { [WORKSPACE_HEADER]: ws };
    const agent = (await call(t.app, 'POST', '/agent', { token: owner.token, headers, body: { name: 'a' } })).json()
      .uuid as string;
    return { owner, member, ws, headers, agent };
  }

  it("ends a removed member's event stream on the workspace", async () => {
    const { owner, member, ws, headers, agent } = await team();
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent}`, { token: member.token, headers, body: { message: 'hi' } })
    ).json().task_id as string;
    const stream = await openRawStream(base, `/agent/${agent}/task/${task}/events`, {
      authorization: `Bearer ${member.token}`,
      ...headers,
    });
    closers.push(stream);
    expect(stream.res.status).toBe(200);
    await stream.until((text) => text.includes('event: task'), 'the first event');
    const removed = await call(t.app, 'DELETE', `/workspaces/${ws}/members/${member.uuid}`, { token: owner.token });
    expect(removed.statusCode).toBe(204);
    await stream.ended();
  });

  it('answers a waiting claim with nothing once its key may no longer work (creator demoted to viewer)', async () => {
    // An admin makes a worker key (member role) and is then demoted to viewer.
    const { owner, member, ws, agent } = await team('admin');
    const worker = await keyIn(t, member, ws, 'member');
    const claim = call(t.app, 'POST', `/agent/${agent}/tasks/claim`, {
      headers: { 'x-api-key': worker.key },
      body: { max_tasks: 1, wait_seconds: 30 },
    });
    // Let the claim start waiting, then demote the key's creator.
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const demoted = await call(t.app, 'PATCH', `/workspaces/${ws}/members/${member.uuid}`, {
      token: owner.token,
      body: { role: 'viewer' },
    });
    expect(demoted.statusCode).toBe(200);
    const res = await claim;
    expect(res.statusCode).toBe(200);
    expect(res.json().tasks).toEqual([]);
    // Before its own 30 s wait ran out: the change ended it (the check runs when the change is heard).
    expect(Date.now() - started).toBeLessThan(29_000);
    // And the key now acts as a viewer: another claim is refused for the role.
    const again = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, {
      headers: { 'x-api-key': worker.key },
      body: { max_tasks: 1 },
    });
    expect(again.statusCode).toBe(403);
    expect(again.json().error.code).toBe('FORBIDDEN');
  }, 60_000);
});
