import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { createAccountsModule } from '../../../src/modules/accounts/accounts-module.js';
import { openProcessDeps } from '../../../src/process-deps.js';
import { call, type TestApp, testConfig } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { expectErrorEnvelope } from '../../helpers/routes.js';
import { createCredential } from '../../helpers/spotlight.js';

const UPSTREAM_KEY = 'sk-never-shown-0123456789-ZYXW';
const messages = [{ role: 'user', content: 'hi' }];

describe.each(DATABASES)('model call records and usage on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;
  const logs: string[] = [];

  const chat = (user: TestUser, body: unknown, headers: Record<string, string> = {}) =>
    call(t.app, 'POST', '/spotlight/v1/chat/completions', { token: user.key, body, headers });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    // The production app with a logger that keeps every line at the most verbose level.
    const config = testConfig(database, { allowPrivateUrls: true, logLevel: 'trace' });
    const sink = new Writable({
      write(chunk, _enc, done) {
        logs.push(String(chunk));
        done();
      },
    });
    const runtime = await openProcessDeps(config, { logger: pino({ level: 'trace' }, sink) });
    const app = await buildApp(config, runtime, { closeRuntime: true });
    await app.ready();
    const accounts = createAccountsModule({
      config,
      runtime,
      box: createSecretBox(runtime.secrets.encryptionKey),
    }).service;
    t = { app, runtime, config, accounts, close: () => app.close() };
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  it("refuses malformed bodies and unknown paths in OpenAI's shape; authentication keeps its flat shape", async () => {
    const user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const cases: Array<[unknown, string | null]> = [
      [{ messages }, 'model'],
      [{ model: '', messages }, 'model'],
      [{ model: 'fake/x' }, 'messages'],
      [{ model: 'fake/x', messages: [] }, 'messages'],
      [[], null],
      ['{"model": ', null],
    ];
    for (const [body, param] of cases) {
      const res = await chat(user, body);
      expect({ body, status: res.statusCode }).toEqual({ body, status: 400 });
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param } });
      expect(Object.keys(res.json().error).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(res.headers['x-taskhook-call-id']).toBeUndefined();
    }
    const text = await call(t.app, 'POST', '/spotlight/v1/chat/completions', {
      token: user.key,
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.statusCode).toBe(415);
    expect(text.json().error.type).toBe('invalid_request_error');
    for (const path of ['/spotlight/v1/embeddings', '/spotlight/v1/chat/completions/x']) {
      const res = await call(t.app, 'POST', path, { token: user.key, body: {} });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null } });
    }
    const anonymous = await call(t.app, 'POST', '/spotlight/v1/chat/completions', {
      body: { model: 'fake/x', messages },
    });
    expect({ status: anonymous.statusCode, body: anonymous.json() }).toEqual({
      status: 401,
      body: { error: 'Authorization header is required' },
    });
  });

  it("attributes a call to one of the caller's tasks, and refuses anyone else's", async () => {
    const user = await createUser(t);
    const other = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const agent = await createAgent(t, user);
    const task = (
      await call(t.app, 'POST', `/agent/request/${agent.uuid}`, { token: user.token, body: { message: 'm' } })
    ).json();
    const otherAgent = await createAgent(t, other);
    const otherTask = (
      await call(t.app, 'POST', `/agent/request/${otherAgent.uuid}`, { token: other.token, body: { message: 'm' } })
    ).json();

    const ok = await chat(user, { model: 'fake/gpt-4o', messages }, { 'x-taskhook-task-id': task.task_id });
    expect(ok.statusCode).toBe(200);
    const rec = (
      await call(t.app, 'GET', `/spotlight/calls/${ok.headers['x-taskhook-call-id']}`, { token: user.token })
    ).json();
    expect(rec).toMatchObject({ task_id: task.task_id, agent_uuid: agent.uuid });
    const byTask = await call(t.app, 'GET', `/spotlight/calls?task_id=${task.task_id}`, { token: user.token });
    expect(byTask.json().calls.map((c: { id: string }) => c.id)).toEqual([rec.id]);

    for (const id of [otherTask.task_id, randomUUID(), 'not-a-uuid']) {
      const res = await chat(user, { model: 'fake/gpt-4o', messages }, { 'x-taskhook-task-id': id });
      expect({ id, status: res.statusCode, code: res.json().error.code }).toEqual({
        id,
        status: 400,
        code: 'invalid_task_id',
      });
    }
  });

  it('totals usage per day, credential and model; records outlive their credential', async () => {
    const user = await createUser(t);
    const a = await createCredential(t, user, { name: 'alpha', base_url: upstream.baseUrl });
    const b = await createCredential(t, user, { name: 'beta', base_url: upstream.baseUrl });
    for (const model of ['alpha/gpt-4o', 'alpha/gpt-4o', 'beta/gpt-4o', 'alpha/rate-limited']) {
      await chat(user, { model, messages });
    }
    const stream = await chat(user, { model: 'beta/gpt-4o', messages, stream: true });
    expect(stream.body).toContain('[DONE]');
    const today = new Date().toISOString().slice(0, 10);
    const res = await call(t.app, 'GET', '/spotlight/usage', { token: user.token });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const from = new Date(Date.parse(`${today}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
    expect({ from: body.from, to: body.to }).toEqual({ from, to: today });
    const gpt4o = { input: 2.5, output: 10 };
    const cost = (n: number) => (n * (11 * gpt4o.input + 7 * gpt4o.output)) / 1e6;
    expect(body.usage).toEqual([
      row(today, a, 'gpt-4o', {
        calls: 2,
        errors: 0,
        input_tokens: 22,
        output_tokens: 14,
        cost_usd: cost(2),
        cache_hits: 0,
      }),
      row(today, b, 'gpt-4o', {
        calls: 2,
        errors: 0,
        input_tokens: 22,
        output_tokens: 14,
        cost_usd: cost(2),
        cache_hits: 0,
      }),
      row(today, a, 'rate-limited', {
        calls: 1,
        errors: 1,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0,
        cache_hits: 0,
      }),
    ]);
    expect(body.totals).toEqual({
      calls: 5,
      errors: 1,
      input_tokens: 44,
      output_tokens: 28,
      cost_usd: cost(4),
      cache_hits: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    });
    // Every record here is a chat completion: the kind filters keep them all, or none.
    const kinds = async (query: string) =>
      (await call(t.app, 'GET', `/spotlight/usage?${query}`, { token: user.token })).json().totals.calls;
    expect([await kinds('api=chat.completions'), await kinds('api=responses')]).toEqual([5, 0]);
    const listed0 = await call(t.app, 'GET', '/spotlight/calls?api=chat.completions', { token: user.token });
    expect(listed0.json().calls).toHaveLength(5);
    expect(listed0.json().calls[0]).toMatchObject({
      api: 'chat.completions',
      cache_read_tokens: null,
      cache_write_tokens: null,
    });
    const none = await call(t.app, 'GET', '/spotlight/calls?api=anthropic.messages', { token: user.token });
    expect(none.json().calls).toEqual([]);

    expect(
      (await call(t.app, 'DELETE', `/user/provider_credentials/${b.uuid}`, { token: user.token })).statusCode,
    ).toBe(204);
    const after = (await call(t.app, 'GET', '/spotlight/usage', { token: user.token })).json();
    expect(after.usage.map((r: { provider_credential_name: string | null }) => r.provider_credential_name)).toEqual([
      'alpha',
      null,
      'alpha',
    ]);
    const listed = (
      await call(t.app, 'GET', `/spotlight/calls?provider_credential_uuid=${b.uuid}`, { token: user.token })
    ).json();
    expect(listed.calls).toHaveLength(2);
    expect(listed.calls.every((c: { provider_credential_name: null }) => c.provider_credential_name === null)).toBe(
      true,
    );

    const past = (
      await call(t.app, 'GET', '/spotlight/usage?from=2020-01-01&to=2020-01-31', { token: user.token })
    ).json();
    expect(past).toEqual({
      from: '2020-01-01',
      to: '2020-01-31',
      usage: [],
      totals: {
        calls: 0,
        errors: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0,
        cache_hits: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
      },
    });
  });

  it('refuses impossible dates, reversed and over-long ranges', async () => {
    const user = await createUser(t);
    for (const query of [
      'from=2026-02-30',
      'to=2026-13-01',
      'from=2026-05-02&to=2026-05-01',
      'from=2025-01-01&to=2026-01-02',
      'from=yesterday',
    ]) {
      expectErrorEnvelope(
        await call(t.app, 'GET', `/spotlight/usage?${query}`, { token: user.token }),
        400,
        'INVALID_REQUEST',
      );
    }
    const year = await call(t.app, 'GET', '/spotlight/usage?from=2024-01-01&to=2024-12-31', { token: user.token });
    expect(year.statusCode).toBe(200);
    expectErrorEnvelope(
      await call(t.app, 'GET', '/spotlight/usage?api=embeddings', { token: user.token }),
      400,
      'INVALID_REQUEST',
    );
    for (const query of ['page=0', 'limit=101', 'task_id=nope', 'agent_uuid=1', 'api=chat']) {
      expectErrorEnvelope(
        await call(t.app, 'GET', `/spotlight/calls?${query}`, { token: user.token }),
        400,
        'INVALID_REQUEST',
      );
    }
  });

  it("shows a user nothing of another user's calls", async () => {
    const user = await createUser(t);
    const other = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const mine = await chat(user, { model: 'fake/gpt-4o', messages });
    const id = String(mine.headers['x-taskhook-call-id']);
    expectErrorEnvelope(await call(t.app, 'GET', `/spotlight/calls/${id}`, { token: other.token }), 404, 'NOT_FOUND');
    expect((await call(t.app, 'GET', '/spotlight/calls', { token: other.token })).json().calls).toEqual([]);
    expect((await call(t.app, 'GET', '/spotlight/usage', { token: other.token })).json().usage).toEqual([]);
    // The other user cannot use the first user's credential by name or uuid either.
    const borrowed = await chat(other, { model: 'fake/gpt-4o', messages });
    expect(borrowed.statusCode).toBe(404);
  });

  it('never shows a provider key or a platform key in any answer or log line', async () => {
    const user = await createUser(t);
    const cred = await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl, api_key: UPSTREAM_KEY });
    const answers = [
      await chat(user, { model: 'fake/gpt-4o', messages }),
      await chat(user, { model: 'fake/gpt-4o', messages, stream: true }),
      await chat(user, { model: 'fake/rate-limited', messages }),
      await chat(user, { model: 'fake/broken', messages }),
      await call(t.app, 'GET', '/spotlight/v1/models', { token: user.key }),
      await call(t.app, 'GET', `/user/provider_credentials/${cred.uuid}`, { token: user.token }),
      await call(t.app, 'GET', '/spotlight/calls', { token: user.token }),
    ];
    expect(upstream.seen.some((s) => s.headers.authorization === `Bearer ${UPSTREAM_KEY}`)).toBe(true);
    expect(logs.length).toBeGreaterThan(0);
    for (const text of [...answers.map((a) => a.body + JSON.stringify(a.headers)), ...logs]) {
      expect(text).not.toContain(UPSTREAM_KEY.slice(3, -4));
      expect(text).not.toContain(user.key.slice(16));
    }
  });
});

function row(date: string, cred: { uuid: string; name: string }, model: string, totals: Record<string, number>) {
  const cache = { cache_read_tokens: 0, cache_write_tokens: 0 };
  return {
    date,
    provider_credential_uuid: cred.uuid,
    provider_credential_name: cred.name,
    model,
    api: 'chat.completions',
    ...cache,
    ...totals,
  };
}
