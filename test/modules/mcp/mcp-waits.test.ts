import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listen, openRawStream } from '../../helpers/streams.js';
import { hexId } from '../telemetry/helpers.js';

/*
 * The edges of a waiting tools/call: the wait running out, a client's notifications/cancelled,
 * a revoked key; a tool list longer than a page; the span a tools/call writes (18.7).
 */

const ACCEPT = 'application/json, text/event-stream';
type RpcAnswer = { result: Record<string, unknown> & { structuredContent?: { status?: string } } };

interface FetchedSpan {
  name: string;
  span_id: string;
  parent_span_id: string | null;
  attributes: Record<string, unknown>;
}

describe.each(DATABASES)('MCP waits, pages and spans on $name', (database) => {
  let t: TestApp;
  let base: string;
  /** A second instance on the same storage whose waits are long. */
  let longer: TestApp;
  let longBase: string;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { mcpWaitSeconds: 1, credentialCacheMs: 0 } });
    base = await listen(t);
    longer = await buildTestApp(database, {
      config: { mcpWaitSeconds: 50, credentialCacheMs: 0, dataDir: t.config.dataDir },
    });
    longBase = await listen(longer);
  });
  afterAll(async () => {
    await longer?.close();
    await t?.close();
  });

  const headersOf = (user: TestUser, extra: Record<string, string> = {}) => ({
    'x-service-api-key': user.key,
    accept: ACCEPT,
    'content-type': 'application/json',
    ...extra,
  });
  const post = (user: TestUser, body: unknown, extra: Record<string, string> = {}) =>
    fetch(`${base}/mcp`, { method: 'POST', headers: headersOf(user, extra), body: JSON.stringify(body) });
  const toolCall = (id: number, name: string, extra: Record<string, unknown> = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: { message: 'review' }, ...extra },
  });
  /** The one JSON-RPC message of an answer, JSON or a stream's last event. */
  async function answerOf(res: Response): Promise<RpcAnswer> {
    const text = await res.text();
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) return JSON.parse(text);
    const data = text.split('\n').filter((line) => line.startsWith('data: '));
    return JSON.parse((data.at(-1) as string).slice(6));
  }
  async function taskIdsOf(user: TestUser, agentId: string): Promise<Array<{ task_id: string; status: string }>> {
    const res = await call(t.app, 'GET', `/agent/${agentId}/tasks`, { token: user.token });
    return res.json().tasks;
  }
  async function traceOf(user: TestUser, traceId: string): Promise<FetchedSpan[]> {
    await t.app.telemetry.tracer.flush();
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
    expect(res.statusCode).toBe(200);
    return res.json().spans;
  }

  it('answers the task still queued when TASKHOOK_MCP_WAIT_SECONDS runs out', async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'slow' });
    const answer = await answerOf(await post(user, toolCall(1, 'slow')));
    const state = answer.result.structuredContent as { task_id: string; status: string };
    expect(state.status).toBe('queued');
    expect(answer.result).toMatchObject({
      isError: false,
      content: [
        {
          type: 'text',
          text: `Task ${state.task_id} is still queued after 1 s. Call get_task with task_id ${state.task_id} to wait for it again.`,
        },
      ],
    });
  });

  it('stops a waiting call on notifications/cancelled without answering it or cancelling the task', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user, { name: 'waiter' });
    {
      const stream = await openRawStream(longBase, '/mcp', headersOf(user), toolCall(7, 'waiter'));
      // The stream opens when the wait starts; the task exists by then.
      await stream.until(() => true, 'the stream');
      let tasks: Array<{ task_id: string; status: string }> = [];
      for (let i = 0; i < 50 && tasks.length === 0; i++) tasks = await taskIdsOf(user, agent.uuid);
      expect(tasks).toHaveLength(1);
      // Another request id is not this one: the wait goes on.
      const other = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 8 } };
      const ignored = await fetch(`${longBase}/mcp`, {
        method: 'POST',
        headers: headersOf(user),
        body: JSON.stringify(other),
      });
      expect(ignored.status).toBe(202);

      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } };
      const res = await fetch(`${longBase}/mcp`, {
        method: 'POST',
        headers: headersOf(user),
        body: JSON.stringify(cancel),
      });
      expect(res.status).toBe(202);
      const text = await stream.ended();
      expect(text).not.toContain('"result"');
      expect((await taskIdsOf(user, agent.uuid))[0]?.status).toBe('queued');
    }
  });

  it('ends a waiting call at once when its platform key is revoked', async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'revoked' });
    {
      const stream = await openRawStream(longBase, '/mcp', headersOf(user), toolCall(3, 'revoked'));
      await stream.until(() => true, 'the stream');
      const res = await call(longer.app, 'DELETE', `/auth/platform_keys/${user.keyUuid}`, { token: user.token });
      expect(res.statusCode).toBe(204);
      expect(await stream.ended()).not.toContain('"result"');
    }
  });

  it('pages a tool list longer than 100 tools with an opaque cursor', async () => {
    const user = await createUser(t);
    for (let i = 0; i < 101; i++) await createAgent(t, user, { name: `agent-${String(i).padStart(3, '0')}` });
    const first = await answerOf(await post(user, { jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    const tools = first.result.tools as Array<{ name: string }>;
    expect(tools).toHaveLength(100);
    const cursor = first.result.nextCursor as string;
    expect(typeof cursor).toBe('string');
    const second = await answerOf(
      await post(user, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor } }),
    );
    const rest = second.result.tools as Array<{ name: string }>;
    expect(second.result.nextCursor).toBeUndefined();
    const names = [...tools, ...rest].map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((name) => name.startsWith('agent-'))).toHaveLength(101);
    const foreign = await post(user, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 'x1' } });
    expect(((await foreign.json()) as { error: { code: number } }).error.code).toBe(-32602);
  });

  it('tells agents of one name apart by the last 8 hex digits of their uuids, made within a minute', async () => {
    const user = await createUser(t);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createAgent(t, user, { name: 'twin' }));
    const answer = await answerOf(await post(user, { jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    const tools = answer.result.tools as Array<{ name: string; _meta: { 'taskhook/agent_id': string } }>;
    const twins = tools.filter((tool) => tool.name.startsWith('twin'));
    expect(twins).toHaveLength(3);
    for (const tool of twins) {
      const uuid = tool._meta['taskhook/agent_id'];
      expect(tool.name).toBe(`twin_${uuid.replace(/-/g, '').slice(-8)}`);
    }
    expect(new Set(twins.map((tool) => tool.name)).size).toBe(3);
    expect(new Set(made.map((agent) => agent.uuid))).toEqual(new Set(twins.map((x) => x._meta['taskhook/agent_id'])));
  });

  it('writes the tools/call span under params._meta.traceparent, the task span under it', async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'traced' });
    const [traceId, parentSpan] = [hexId(16), hexId(8)];
    const res = await post(
      user,
      toolCall(11, 'traced', { task: { ttl: 60_000 }, _meta: { traceparent: `00-${traceId}-${parentSpan}-01` } }),
      // The valid _meta value wins over the header.
      { traceparent: `00-${hexId(16)}-${hexId(8)}-01`, 'mcp-protocol-version': '2025-11-25' },
    );
    const taskId = ((await answerOf(res)).result.task as { taskId: string }).taskId;
    await call(t.app, 'POST', `/agent/${(await taskOwner(user, taskId)) as string}/task/${taskId}/cancel`, {
      token: user.token,
    });
    const spans = await traceOf(user, traceId);
    const toolSpan = spans.find((s) => s.name === 'tools/call traced') as FetchedSpan;
    expect(toolSpan).toMatchObject({ parent_span_id: parentSpan });
    expect(toolSpan.attributes).toEqual({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'traced',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': '11',
      'mcp.protocol.version': '2025-11-25',
      'taskhook.task_id': taskId,
    });
    expect(spans.find((s) => s.name === 'task traced')).toMatchObject({ parent_span_id: toolSpan.span_id });
  });

  it('joins the HTTP traceparent when _meta has no valid one, and ends the span with the answer', async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'headed' });
    const [traceId, parentSpan] = [hexId(16), hexId(8)];
    const res = await post(user, toolCall(12, 'headed', { _meta: { traceparent: 'not-a-traceparent' } }), {
      traceparent: `00-${traceId}-${parentSpan}-01`,
    });
    const state = (await answerOf(res)).result.structuredContent as { task_id: string };
    const spans = await traceOf(user, traceId);
    const toolSpan = spans.find((s) => s.name === 'tools/call headed') as FetchedSpan & {
      start_time_unix_nano: string;
      end_time_unix_nano: string;
    };
    expect(toolSpan).toMatchObject({ parent_span_id: parentSpan });
    expect(toolSpan.attributes['taskhook.task_id']).toBe(state.task_id);
    expect(toolSpan.attributes['mcp.protocol.version']).toBeUndefined();
  });

  async function taskOwner(user: TestUser, taskId: string) {
    const list = await call(t.app, 'GET', '/agent/list', { token: user.token });
    for (const agent of list.json().agents as Array<{ uuid: string }>) {
      const res = await call(t.app, 'GET', `/agent/${agent.uuid}/task/${taskId}`, { token: user.token });
      if (res.statusCode === 200) return agent.uuid;
    }
    return undefined;
  }
});
