import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { createAccountsModule } from '../../../src/modules/accounts/accounts-module.js';
import { openProcessDeps, REDACT } from '../../../src/process-deps.js';
import { call, type TestApp, testConfig } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';

/** How much of a platform key may be shown again (its `prefix`). */
const KEY_PREFIX_LENGTH = 16;
const PART = 12;

/** Every 12-character piece of a secret, past what may be shown of it, and the secret itself. */
function piecesOf(secret: string, shownPrefix = 0): string[] {
  const pieces = [secret];
  for (let i = Math.max(0, shownPrefix - PART + 1); i + PART <= secret.length; i++) {
    pieces.push(secret.slice(i, i + PART));
  }
  return pieces;
}

describe.each(DATABASES)('no secret in the audit log or the logs on $name', (database) => {
  let t: TestApp;
  const lines: string[] = [];

  beforeAll(async () => {
    // The production app and its redaction, logging every line at the most verbose level.
    const config = testConfig(database, { logLevel: 'trace' });
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino({ level: 'trace', redact: { paths: REDACT, censor: '[redacted]' } }, sink);
    const runtime = await openProcessDeps(config, { logger, checkTransactions: true });
    const app = await buildApp(config, runtime, { closeRuntime: true });
    await app.ready();
    const accounts = createAccountsModule({ config, runtime, box: createSecretBox(runtime.secrets.encryptionKey) });
    t = { app, runtime, config, accounts: accounts.service, close: () => app.close() };
  });
  afterAll(async () => t.close());

  it('holds none of the secrets made, whole or in part', async () => {
    const user = await createUser(t);
    const secrets: Array<[string, string, number?]> = [
      ['platform key', user.key, KEY_PREFIX_LENGTH],
      ['first password', user.password],
      ['first JWT', user.token],
    ];
    const ok = async (method: 'GET' | 'POST' | 'PATCH', url: string, body?: object, token = user.token) => {
      const res = await call(t.app, method, url, { token, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
      return res.body ? res.json() : null;
    };

    secrets.push(['ingest token', (await ok('POST', '/auth/generate_ingest_token')).token]);
    const headerValue = `Bearer hv-${randomUUID()}`;
    const runtime = { type: 'http', url: 'https://93.184.216.34/run', headers: { Authorization: headerValue } };
    const agent = await ok('POST', '/agent', { name: 'pushed', runtime });
    secrets.push(['runtime header value', headerValue]);
    const newHeader = `hv2-${randomUUID()}`;
    await ok('PATCH', `/agent/${agent.uuid}`, { runtime: { ...runtime, headers: { Authorization: newHeader } } });
    secrets.push(['changed runtime header value', newHeader]);

    const trigger = await ok('POST', `/v1/agent/${agent.uuid}/triggers`, { name: 'hook', message_template: 'x' });
    secrets.push(['webhook secret', trigger.webhook_secret]);
    const rotated = await ok('POST', `/v1/agent/${agent.uuid}/triggers/${trigger.uuid}/rotate_secret`);
    secrets.push(['rotated webhook secret', rotated.webhook_secret]);

    secrets.push(['signing secret', (await ok('GET', '/auth/webhook_signing_secret')).secret]);
    await ok('POST', '/auth/webhook_signing_secret/rotate');
    secrets.push(['rotated signing secret', (await ok('GET', '/auth/webhook_signing_secret')).secret]);

    const apiKey = `sk-proj-${randomUUID()}`;
    const credential = await ok('POST', '/user/provider_credentials', {
      name: 'openai',
      provider: 'openai',
      api_key: apiKey,
      base_url: 'https://93.184.216.34/v1',
    });
    const newApiKey = `sk-proj-${randomUUID()}`;
    await ok('PATCH', `/user/provider_credentials/${credential.uuid}`, { api_key: newApiKey });
    secrets.push(['provider api_key', apiKey], ['changed provider api_key', newApiKey]);

    const newPassword = `pw2-${randomUUID()}`;
    await ok('POST', '/auth/change_password', { current_password: user.password, new_password: newPassword });
    const login = await ok('POST', '/auth/login', { email: user.email, password: newPassword });
    secrets.push(['new password', newPassword], ['new JWT', login.token]);

    const entries: unknown[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : '';
      const page = await ok('GET', `/workspaces/${user.uuid}/audit_log?limit=3${query}`, undefined, login.token);
      entries.push(...page.entries);
      cursor = page.next_cursor;
    } while (cursor);
    // key, token, agent create + update, trigger create + rotate, signing secret, credential create + update.
    expect(entries).toHaveLength(9);
    expect(lines.length).toBeGreaterThan(20);

    const haystacks: Array<[string, string]> = [
      ['the audit log', JSON.stringify(entries)],
      ...lines.map((line, i): [string, string] => [`log line ${i}`, line]),
    ];
    const leaks: string[] = [];
    for (const [what, secret, shown] of secrets) {
      expect(secret.length, what).toBeGreaterThanOrEqual(PART);
      for (const piece of piecesOf(secret, shown)) {
        for (const [where, text] of haystacks) {
          if (text.includes(piece)) leaks.push(`${what} (${piece}) in ${where}: ${text.slice(0, 300)}`);
        }
      }
    }
    expect(leaks).toEqual([]);
  });
});
