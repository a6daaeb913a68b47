import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toDbJson } from '../../../src/db/json.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { expectErrorEnvelope } from '../../helpers/routes.js';

const KEY = 'sk-proj-abcdefghijklmnop-wxyz';
// No test reaches the internet: public names resolve to a documentation-free public address here.
const lookup = async (host: string) =>
  host.endsWith('.internal') ? [{ address: '10.0.0.7', family: 4 }] : [{ address: '93.184.215.14', family: 4 }];

describe.each(DATABASES)('provider credentials on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  const create = (body: Record<string, unknown>, who: TestUser = user) =>
    call(t.app, 'POST', '/user/provider_credentials', { token: who.token, body });

  beforeAll(async () => {
    t = await buildTestApp(database, { lookup });
  });
  afterAll(() => t.close());

  it('creates a credential: 201, the documented shape, a hint and never the key', async () => {
    user = await createUser(t);
    const res = await create({ name: 'openai', provider: 'openai', api_key: KEY });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      ['api_key_hint', 'base_url', 'created_at', 'last_used_at', 'name', 'provider', 'updated_at', 'uuid'].sort(),
    );
    expect(body).toMatchObject({
      name: 'openai',
      provider: 'openai',
      base_url: 'https://api.openai.com/v1',
      api_key_hint: 'sk-…wxyz',
      last_used_at: null,
    });
    expect(body.created_at).toBe(body.updated_at);
    expect(res.body).not.toContain('abcdefghijklmnop');
    const listed = await call(t.app, 'GET', '/user/provider_credentials', { token: user.token });
    const one = await call(t.app, 'GET', `/user/provider_credentials/${body.uuid}`, { token: user.token });
    expect(one.json()).toEqual(body);
    expect(listed.json().provider_credentials).toEqual([body]);
    for (const r of [listed, one]) expect(r.body).not.toContain(KEY.slice(3, -4));
  });

  it('keeps the key only encrypted: no column of the row holds it', async () => {
    const owner = await createUser(t);
    const secret = `sk-${'q'.repeat(40)}-unique-${owner.uuid}`;
    const res = await create({ name: 'sealed', provider: 'openai', api_key: secret }, owner);
    expect(res.statusCode).toBe(201);
    const { rows } = await sql<
      Record<string, unknown>
    >`select * from provider_credentials where uuid = ${res.json().uuid}`.execute(t.runtime.db.kysely);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows[0])).not.toContain(secret.slice(3, 30));
  });

  it('shows "…" for keys shorter than 16 characters', async () => {
    const owner = await createUser(t);
    const res = await create({ name: 'short', provider: 'openai', api_key: 'sk-short' }, owner);
    expect(res.json().api_key_hint).toBe('…');
  });

  it('stores base_url without trailing slashes and refuses malformed or private ones', async () => {
    const owner = await createUser(t);
    const ok = await create(
      { name: 'vllm', provider: 'openai', api_key: KEY, base_url: 'https://llm.example.com/v1//' },
      owner,
    );
    expect(ok.json().base_url).toBe('https://llm.example.com/v1');
    for (const base_url of [
      'ftp://llm.example.com/v1',
      'not a url',
      'https://user:pw@llm.example.com/v1',
      'https://llm.example.com/v1?x=1',
      'https://llm.example.com/v1#frag',
      'http://127.0.0.1:11434/v1',
      'http://2130706433/v1',
      'http://[::ffff:10.0.0.1]/v1',
      'http://169.254.169.254/latest',
      'http://ollama.internal/v1',
      'http://localhost:11434/v1',
      `https://llm.example.com/${'a'.repeat(2100)}`,
    ]) {
      const res = await create({ name: 'bad', provider: 'openai', api_key: KEY, base_url }, owner);
      expect({ base_url, status: res.statusCode }).toEqual({ base_url, status: 400 });
      expectErrorEnvelope(res, 400, 'INVALID_REQUEST', 'base_url');
    }
    const list = await call(t.app, 'GET', '/user/provider_credentials', { token: owner.token });
    expect(list.json().provider_credentials.map((c: { name: string }) => c.name)).toEqual(['vllm']);
  });

  it('refuses bad names, duplicate names, other providers and unknown fields', async () => {
    const owner = await createUser(t);
    expect((await create({ name: 'dup', provider: 'openai', api_key: KEY }, owner)).statusCode).toBe(201);
    expectErrorEnvelope(
      await create({ name: 'dup', provider: 'openai', api_key: KEY }, owner),
      400,
      'INVALID_REQUEST',
      'name',
    );
    // Names are case-sensitive.
    expect((await create({ name: 'Dup', provider: 'openai', api_key: KEY }, owner)).statusCode).toBe(201);
    for (const name of ['a/b', '', '-lead', 'x'.repeat(65), 'sp ace', 5]) {
      expectErrorEnvelope(
        await create({ name, provider: 'openai', api_key: KEY }, owner),
        400,
        'INVALID_REQUEST',
        'name',
      );
    }
    expectErrorEnvelope(
      await create({ name: 'p', provider: 'anthropic', api_key: KEY }, owner),
      400,
      'INVALID_REQUEST',
      'provider',
    );
    expectErrorEnvelope(
      await create({ name: 'k', provider: 'openai', api_key: '' }, owner),
      400,
      'INVALID_REQUEST',
      'api_key',
    );
    expectErrorEnvelope(
      await create({ name: 'k', provider: 'openai', api_key: 'x'.repeat(4097) }, owner),
      400,
      'INVALID_REQUEST',
      'api_key',
    );
    expectErrorEnvelope(
      await create({ name: 'u', provider: 'openai', api_key: KEY, extra: 1 }, owner),
      400,
      'INVALID_REQUEST',
      'extra',
    );
    // A user may reuse another user's name.
    const other = await createUser(t);
    expect((await create({ name: 'dup', provider: 'openai', api_key: KEY }, other)).statusCode).toBe(201);
  });

  it('lists newest first and updates name, key (new hint) and base_url; provider cannot change', async () => {
    const owner = await createUser(t);
    const first = (await create({ name: 'one', provider: 'openai', api_key: KEY }, owner)).json();
    const second = (await create({ name: 'two', provider: 'openai', api_key: KEY }, owner)).json();
    const list = await call(t.app, 'GET', '/user/provider_credentials', { token: owner.token });
    expect(list.json().provider_credentials.map((c: { uuid: string }) => c.uuid)).toEqual([second.uuid, first.uuid]);

    const url = `/user/provider_credentials/${first.uuid}`;
    const patched = await call(t.app, 'PATCH', url, {
      token: owner.token,
      body: { name: 'renamed', api_key: 'sk-new-key-0123456789-abcd', base_url: 'https://other.example.org/api/v1/' },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      uuid: first.uuid,
      name: 'renamed',
      api_key_hint: 'sk-…abcd',
      base_url: 'https://other.example.org/api/v1',
      created_at: first.created_at,
    });
    expect((await call(t.app, 'GET', url, { token: owner.token })).json()).toEqual(patched.json());
    expectErrorEnvelope(
      await call(t.app, 'PATCH', url, { token: owner.token, body: { provider: 'openai' } }),
      400,
      'INVALID_REQUEST',
      'provider',
    );
    expectErrorEnvelope(
      await call(t.app, 'PATCH', url, { token: owner.token, body: { name: 'two' } }),
      400,
      'INVALID_REQUEST',
      'name',
    );
    expectErrorEnvelope(
      await call(t.app, 'PATCH', url, { token: owner.token, body: { base_url: 'http://10.1.2.3/v1' } }),
      400,
      'INVALID_REQUEST',
      'base_url',
    );
    expect((await call(t.app, 'GET', url, { token: owner.token })).json()).toEqual(patched.json());
  });

  it('deletes (then 404), and refuses with 409 CREDENTIAL_IN_USE while an agent runtime names it', async () => {
    const owner = await createUser(t);
    const used = (await create({ name: 'used', provider: 'openai', api_key: KEY }, owner)).json();
    const free = (await create({ name: 'free', provider: 'openai', api_key: KEY }, owner)).json();
    const agent = await createAgent(t, owner, { name: 'model agent' });
    // The agents API does not take model runtimes yet: write the stored runtime as it will look.
    const runtime = { type: 'openai', provider_credential_uuid: used.uuid, model: 'gpt-4o-mini' };
    await t.runtime.db.transaction((trx) =>
      trx
        .updateTable('agents')
        .set({ runtime: toDbJson(runtime) })
        .where('uuid', '=', agent.uuid)
        .execute(),
    );
    const refused = await call(t.app, 'DELETE', `/user/provider_credentials/${used.uuid}`, { token: owner.token });
    expectErrorEnvelope(refused, 409, 'CREDENTIAL_IN_USE');
    expect(refused.json().error.message).toContain('model agent');
    expect(
      (await call(t.app, 'GET', `/user/provider_credentials/${used.uuid}`, { token: owner.token })).statusCode,
    ).toBe(200);

    const gone = await call(t.app, 'DELETE', `/user/provider_credentials/${free.uuid}`, { token: owner.token });
    expect(gone.statusCode).toBe(204);
    expectErrorEnvelope(
      await call(t.app, 'GET', `/user/provider_credentials/${free.uuid}`, { token: owner.token }),
      404,
      'NOT_FOUND',
    );
    expectErrorEnvelope(
      await call(t.app, 'DELETE', `/user/provider_credentials/${free.uuid}`, { token: owner.token }),
      404,
      'NOT_FOUND',
    );
  });

  it('allows at most 100 credentials per workspace', async () => {
    const owner = await createUser(t);
    for (let i = 0; i < 100; i++) {
      const res = await create({ name: `c${i}`, provider: 'openai', api_key: 'k' }, owner);
      expect(res.statusCode).toBe(201);
    }
    expectErrorEnvelope(
      await create({ name: 'c100', provider: 'openai', api_key: 'k' }, owner),
      400,
      'INVALID_REQUEST',
    );
  });
});
