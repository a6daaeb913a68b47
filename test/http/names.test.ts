import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenCharacterIn } from '../../src/http/names.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { createTrigger } from '../helpers/triggers.js';

/*
 * Names (workspaces, agents, triggers, schedules, platform keys) refuse control characters on
 * every create and rename, the CLI's `key create` included; every other character stays allowed.
 */

const REFUSED = ['a\nb', 'tab\there', 'cr\r', 'nul\u0000', 'del\u007f', 'c1\u0085', 'ls\u2028', 'ps\u2029'];
const BIDI = ['\u061c', '\u200e', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069'].map((c) => `x${c}y`);
const ALLOWED = 'Ünïcødé 名前 😀\u00a0نص ok';

describe('forbiddenCharacterIn', () => {
  it('names the first control character and passes everything else', () => {
    expect(forbiddenCharacterIn('a\nb')).toBe('U+000A');
    expect(forbiddenCharacterIn('x\u202ey')).toBe('U+202E');
    for (const name of [...REFUSED, ...BIDI]) expect(forbiddenCharacterIn(name), JSON.stringify(name)).not.toBeNull();
    for (const c of ['\u001f', '\u0080', '\u009f', '\u202b', '\u202c', '\u202d', '\u2067', '\u2068']) {
      expect(forbiddenCharacterIn(c)).not.toBeNull();
    }
    for (const name of [ALLOWED, '\u00a0', '\u00a1', '\u200d', '\u2027', '\u202f', '\u206a', 'plain']) {
      expect(forbiddenCharacterIn(name), JSON.stringify(name)).toBeNull();
    }
  });
});

describe.each(DATABASES)('names without control characters on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agent: string;
  let ws: string;
  let trigger: string;
  let schedule: string;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    agent = (await createAgent(t, user, { name: 'agent' })).uuid;
    trigger = (await createTrigger(t, user, agent, { name: 'trigger' })).uuid;
    const res = await call(t.app, 'POST', `/v1/agent/${agent}/schedules`, {
      token: user.token,
      body: { name: 'schedule', cron: '0 3 * * *', message: 'nightly' },
    });
    expect(res.statusCode, res.body).toBe(201);
    schedule = res.json().uuid;
    ws = (await call(t.app, 'POST', '/workspaces', { token: user.token, body: { name: 'team' } })).json().uuid;
  });
  afterAll(() => t.close());

  /** Every create and rename that takes a name: method, URL, the body around the name. */
  const endpoints = () =>
    [
      ['POST', '/workspaces', {}],
      ['PATCH', `/workspaces/${ws}`, {}],
      ['POST', '/agent', {}],
      ['PATCH', `/agent/${agent}`, {}],
      ['POST', `/v1/agent/${agent}/triggers`, { message_template: 'hi' }],
      ['PATCH', `/v1/agent/${agent}/triggers/${trigger}`, {}],
      ['POST', `/v1/agent/${agent}/schedules`, { cron: '0 3 * * *', message: 'nightly' }],
      ['PATCH', `/v1/agent/${agent}/schedules/${schedule}`, {}],
      ['POST', '/auth/platform_keys', {}],
    ] as const;

  /** What the user's resources are called, and how many there are: a refused request changes none of it. */
  async function state() {
    const get = async (url: string) => (await call(t.app, 'GET', url, { token: user.token })).json();
    return JSON.stringify([
      (await get('/workspaces')).workspaces.map((w: { name: string }) => w.name),
      (await get('/agent/list')).agents.map((a: { name: string }) => a.name),
      (await get(`/v1/agent/${agent}/triggers`)).triggers.map((x: { name: string }) => x.name),
      (await get(`/v1/agent/${agent}/schedules`)).schedules.map((x: { name: string }) => x.name),
      (await get('/auth/platform_keys')).keys.map((k: { name: string }) => k.name),
    ]);
  }

  it('refuses a name with a control character on every create and rename: 400 on "name", nothing changes', async () => {
    const before = await state();
    for (const [method, url, body] of endpoints()) {
      for (const name of [...REFUSED, ...BIDI]) {
        const res = await call(t.app, method, url, { token: user.token, body: { ...body, name } });
        expect(res.statusCode, `${method} ${url} ${JSON.stringify(name)}: ${res.body}`).toBe(400);
        expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'name' } });
      }
    }
    expect(await state()).toBe(before);
  });

  it('keeps every other character: letters of any script, emoji, no-break space', async () => {
    for (const [method, url, body] of endpoints()) {
      const res = await call(t.app, method, url, { token: user.token, body: { ...body, name: ALLOWED } });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
      expect(res.json().name).toBe(ALLOWED);
    }
  });

  it("refuses it in the CLI's key create (the service the CLI calls), creating nothing", async () => {
    const before = await state();
    await expect(t.accounts.createPlatformKeyByEmail(user.email, 'evil\nkey')).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      details: { field: 'name' },
    });
    expect(await state()).toBe(before);
  });
});
