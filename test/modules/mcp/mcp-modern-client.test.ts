import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type RunningWorker, runWorker, type TaskHandler } from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

/** The worker: `ask` asks which file and completes with the answer; `steps` reports progress; `boom` fails. */
const handler: TaskHandler = async (task, ctx) => {
  if (task.message === 'ask') {
    const replies = task.messages.filter((m, i) => i > 0 && m.role === 'user');
    if (replies.length === 0) return ctx.askForInput('Which file?');
    if (replies.length === 1 && replies[0]?.content === 'both') return ctx.askForInput('Which line?');
    return { summary: `reviewed ${replies.map((r) => r.content).join('+')}`, findings: [] };
  }
  if (task.message === 'boom') throw new Error('it broke');
  if (task.message === 'steps') await ctx.progress('reading', 1, 2, true);
  return { summary: `done: ${task.message}`, findings: [] };
};

/** A 2026-07-28 client of the official SDK 2.x, pinned to that revision (no initialize). */
async function connectModern(baseUrl: string, key: string, opts: { elicitation?: boolean } = {}) {
  const client = new Client(
    { name: 'test-2026', version: '1.0.0' },
    {
      capabilities: opts.elicitation ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { 'x-service-api-key': key } },
  });
  await client.connect(transport);
  return client;
}

describe.each(DATABASES)('MCP 2026-07-28 with the SDK 2.x client on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  const workers: RunningWorker[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    await t.app.listen({ port, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(() => t.close());

  async function setup(name = 'reviewer') {
    const user: TestUser = await createUser(t);
    const agentId = (await createAgent(t, user, { name, description: 'Reviews diffs' })).uuid;
    workers.push(runWorker({ baseUrl, apiKey: user.key, agentId, handler }));
    return { user, agentId };
  }

  it('discovers the server and lists the platform tools and one tool per agent', async () => {
    const { user, agentId } = await setup('code reviewer!');
    await createAgent(t, user, { name: 'get_task' });
    const client = await connectModern(baseUrl, user.key);
    clients.push(client);
    expect(client.getServerVersion()?.name).toBe('taskhook');
    expect(client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).slice(0, 4)).toEqual([
      'get_task',
      'reply_to_task',
      'cancel_task',
      'code_reviewer',
    ]);
    expect(tools[3]?._meta).toEqual({ 'taskhook/agent_id': agentId });
    expect(tools[3]?.execution).toBeUndefined();
    expect(tools[4]?.name).toMatch(/^get_task_[0-9a-f]{8}$/);
  });

  it('runs a call to completion with progress, failures and bad arguments as tool errors', async () => {
    const { user, agentId } = await setup();
    const client = await connectModern(baseUrl, user.key);
    clients.push(client);
    const progress: number[] = [];
    const result = await client.callTool(
      { name: 'reviewer', arguments: { message: 'steps' } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ agent_id: agentId, status: 'completed' });
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe('done: steps');
    expect(progress).toEqual([1]);
    const failed = await client.callTool({ name: 'reviewer', arguments: { message: 'boom' } });
    expect(failed.isError).toBe(true);
    expect((failed.content as Array<{ text: string }>)[0]?.text).toMatch(/^Task .* failed: /);
    const bad = await client.callTool({ name: 'reviewer', arguments: { message: '' } });
    expect(bad.isError).toBe(true);
    await expect(client.callTool({ name: 'nobody', arguments: { message: 'x' } })).rejects.toThrow(/Unknown tool/);
  });

  it('answers awaiting_input at once to a client without elicitation, then reply_to_task finishes it', async () => {
    const { user } = await setup();
    const client = await connectModern(baseUrl, user.key);
    clients.push(client);
    const first = await client.callTool({ name: 'reviewer', arguments: { message: 'ask' } });
    const state = first.structuredContent as { task_id: string; status: string };
    expect(state.status).toBe('awaiting_input');
    const done = await client.callTool({
      name: 'reply_to_task',
      arguments: { task_id: state.task_id, message: 'b.ts' },
    });
    expect(done.structuredContent).toMatchObject({ status: 'completed', result: { summary: 'reviewed b.ts' } });
  });

  it("asks the agent's questions as input_required results the client answers by retrying", async () => {
    const { user } = await setup();
    const client = await connectModern(baseUrl, user.key, { elicitation: true });
    clients.push(client);
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { answer: asked.length === 1 ? 'both' : 'line 3' } };
    });
    const result = await client.callTool({ name: 'reviewer', arguments: { message: 'ask' } });
    expect(asked).toEqual(['Which file?', 'Which line?']);
    expect(result.structuredContent).toMatchObject({
      status: 'completed',
      result: { summary: 'reviewed both+line 3' },
    });
  });

  it('ends a declined question with the awaiting_input result', async () => {
    const { user } = await setup();
    const client = await connectModern(baseUrl, user.key, { elicitation: true });
    clients.push(client);
    client.setRequestHandler('elicitation/create', async () => ({ action: 'decline' }));
    const result = await client.callTool({ name: 'reviewer', arguments: { message: 'ask' } });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: 'awaiting_input', question: 'Which file?' });
  });

  it('tells an open subscriptions/listen when the tool list changes', async () => {
    const { user } = await setup();
    const client = await connectModern(baseUrl, user.key);
    clients.push(client);
    let changed!: () => void;
    const heard = new Promise<void>((resolve) => {
      changed = resolve;
    });
    client.setNotificationHandler('notifications/tools/list_changed', async () => changed());
    const subscription = await client.listen({ toolsListChanged: true, promptsListChanged: true });
    expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
    await createAgent(t, user, { name: 'second' });
    await heard;
    await subscription.close();
    expect(await subscription.closed).toBe('local');
  });
});
