import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { type RunningWorker, runWorker, type TaskHandler } from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

/** `ask` asks which file; anything else completes at once. */
const handler: TaskHandler = async (task, ctx) => {
  if (task.message === 'ask') {
    const reply = task.messages.find((m, i) => i > 0 && m.role === 'user');
    if (!reply) return ctx.askForInput('Which file?');
    return { summary: `reviewed ${reply.content}`, findings: [] };
  }
  return { summary: `done: ${task.message}`, findings: [] };
};

/** A client whose JSON-RPC responses (elicitation answers) go to `answersTo` instead. */
async function connect(baseUrl: string, headers: Record<string, string>, answersTo?: string) {
  const client = new Client(
    { name: 'test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, tasks: { requests: {} } } },
  );
  const fetchImpl: typeof fetch = (input, init) => {
    const body = typeof init?.body === 'string' ? init.body : '';
    const response = body.includes('"result"') && !body.includes('"method"');
    return fetch(response && answersTo ? `${answersTo}/mcp` : input, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers },
    fetch: fetchImpl,
  });
  await client.connect(transport);
  return client;
}

describe.each(DATABASES)('MCP Tasks, two instances and roles on $name', (database) => {
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  const workers: RunningWorker[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    urlA = `http://127.0.0.1:${portA}`;
    urlB = `http://127.0.0.1:${portB}`;
    a = await buildTestApp(database, { config: { publicUrl: urlA } });
    b = await buildTestApp(database, { config: { publicUrl: urlB, dataDir: a.config.dataDir } });
    await a.app.listen({ port: portA, host: '127.0.0.1' });
    await b.app.listen({ port: portB, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function setup() {
    const user: TestUser = await createUser(a);
    const agentId = (await createAgent(a, user, { name: 'reviewer' })).uuid;
    // Short claims: on SQLite a message written by the other instance wakes no claim on this one.
    workers.push(runWorker({ baseUrl: urlA, apiKey: user.key, agentId, handler, waitSeconds: 1 }));
    return { user, agentId };
  }

  it('runs a task-augmented call: get, result with a question, list', async () => {
    const { user } = await setup();
    const client = await connect(urlA, { 'x-service-api-key': user.key });
    clients.push(client);
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'c.ts' } }));
    const created = await client.request(
      { method: 'tools/call', params: { name: 'reviewer', arguments: { message: 'ask' }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(created.task).toMatchObject({ ttl: null, pollInterval: 1000 });
    const got = await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
    expect(got.taskId).toBe(taskId);
    const result = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ status: 'completed', result: { summary: 'reviewed c.ts' } });
    expect(result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId } });
    const list = await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
    expect(list.tasks.map((task) => task.taskId)).toEqual([taskId]);
    const unknown = client.request({ method: 'tasks/get', params: { taskId: randomUUID() } }, GetTaskResultSchema);
    await expect(unknown).rejects.toThrow(/Unknown taskId/);
  });

  it('cancels an MCP task, and refuses to cancel a completed one', async () => {
    const { user } = await setup();
    // No worker serves this agent: its task stays queued until cancelled.
    await createAgent(a, user, { name: 'idle' });
    const client = await connect(urlA, { 'x-service-api-key': user.key });
    clients.push(client);
    const start = (message: string, name = 'reviewer') =>
      client.request(
        { method: 'tools/call', params: { name, arguments: { message }, task: {} } },
        CreateTaskResultSchema,
      );
    const held = (await start('hold', 'idle')).task.taskId;
    const cancelled = await client.request({ method: 'tasks/cancel', params: { taskId: held } }, GetTaskResultSchema);
    expect(cancelled.status).toBe('cancelled');
    const quick = (await start('quick')).task.taskId;
    await client.request({ method: 'tasks/result', params: { taskId: quick } }, CallToolResultSchema);
    const refused = client.request({ method: 'tasks/cancel', params: { taskId: quick } }, GetTaskResultSchema);
    await expect(refused).rejects.toThrow(/cannot be cancelled/);
  });

  it('takes the answer to a question at a second instance', async () => {
    const { user } = await setup();
    const client = await connect(urlA, { 'x-service-api-key': user.key }, urlB);
    clients.push(client);
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'd.ts' } }));
    const result = await client.callTool({ name: 'reviewer', arguments: { message: 'ask' } });
    expect(result.structuredContent).toMatchObject({ status: 'completed', result: { summary: 'reviewed d.ts' } });
  });

  it("gives a team viewer the workspace's tools but FORBIDDEN for calls", async () => {
    const { agentId } = await setup();
    const owner = await createUser(a);
    const viewer = await createUser(a);
    const workspace = randomUUID();
    const at = new Date().toISOString();
    const db = a.runtime.db.kysely;
    await db
      .insertInto('workspaces')
      .values({ uuid: workspace, name: 'Team', personal: 0, created_at: at, updated_at: at, deleted_at: null })
      .execute();
    await db
      .insertInto('workspace_members')
      .values([
        { workspace_uuid: workspace, user_uuid: owner.uuid, role: 'owner', joined_at: at },
        { workspace_uuid: workspace, user_uuid: viewer.uuid, role: 'viewer', joined_at: at },
      ])
      .execute();
    const headers = { authorization: `Bearer ${viewer.token}`, 'x-taskhook-workspace': workspace };
    const client = await connect(urlA, headers);
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['get_task', 'reply_to_task', 'cancel_task']);
    const refused = await client.callTool({ name: 'cancel_task', arguments: { task_id: agentId } });
    expect(refused.isError).toBe(true);
    expect((refused.content as Array<{ text: string }>)[0]?.text).toMatch(/^FORBIDDEN: /);
  });
});
