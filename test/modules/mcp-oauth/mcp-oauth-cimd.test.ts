import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, tempDir } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { approveFor, exchange, LOOPBACK_REDIRECT, modernMcp, queryOf } from './oauth-helpers.js';

// A client whose client_id is the https URL of its metadata document. The document is served over
// TLS on 127.0.0.1 (a self-signed certificate made for the test; this test process alone skips
// certificate verification), so the https rule of client_id stays as it is; the app allows private
// addresses, as an operator would with TASKHOOK_ALLOW_PRIVATE_URLS. A second app without that
// setting shows the SSRF guard refusing the same document.
describe.each(DATABASES)('MCP OAuth with a Client ID Metadata Document on $name', (database) => {
  let t: TestApp;
  let guarded: TestApp;
  let server: Server;
  let base: string;
  const documents = new Map<string, { status: number; body: string }>();
  let fetched = 0;
  const rejectUnauthorized = process.env.NODE_TLS_REJECT_UNAUTHORIZED;

  beforeAll(async () => {
    const dir = tempDir('taskhook-cimd-');
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      fetched += 1;
      const doc = documents.get(req.url ?? '');
      res.writeHead(doc?.status ?? 404, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(doc?.body ?? '{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    t = await buildTestApp(database, { config: { allowPrivateUrls: true } });
    guarded = await buildTestApp(database, { config: { dataDir: t.config.dataDir, allowPrivateUrls: false } });
  });
  afterAll(async () => {
    if (rejectUnauthorized === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = rejectUnauthorized;
    await Promise.all([t.close(), guarded.close()]);
    await new Promise((resolve) => server.close(resolve));
  });

  /** Serves a document at `path` whose client_id is its URL (unless `doc` says otherwise). */
  function serve(path: string, doc: Record<string, unknown> = {}, status = 200) {
    const clientId = `${base}${path}`;
    const body = { client_id: clientId, client_name: 'Docs client', redirect_uris: [LOOPBACK_REDIRECT], ...doc };
    documents.set(path, { status, body: JSON.stringify(body) });
    return clientId;
  }

  const authorizeQuery = (clientId: string) =>
    new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: LOOPBACK_REDIRECT,
      code_challenge: 'A'.repeat(43),
      code_challenge_method: 'S256',
    });

  it('fetches the document, shows the client as metadata_document and issues tokens to it', async () => {
    const user = await createUser(t);
    const clientId = serve('/clients/good.json', { grant_types: ['authorization_code', 'refresh_token'] });
    const authorize = await call(t.app, 'GET', `/oauth/authorize?${authorizeQuery(clientId)}`);
    expect(authorize.statusCode).toBe(302);
    const requestId = queryOf(String(authorize.headers.location)).request_id;
    const shown = await call(t.app, 'GET', `/oauth/authorization_requests/${requestId}`, { token: user.token });
    expect(shown.json().client).toEqual({
      client_id: clientId,
      client_name: 'Docs client',
      client_uri: null,
      logo_uri: null,
      registration: 'metadata_document',
    });

    const got = await approveFor(t, user, { clientId });
    const tokens = await exchange(t, clientId, got);
    expect(tokens.statusCode).toBe(200);
    expect(tokens.json().refresh_token).toMatch(/^mcp_rt_/);
    expect((await modernMcp(t, tokens.json().access_token, 'tools/list')).status).toBe(200);
    const grants = (await call(t.app, 'GET', '/auth/mcp_grants', { token: user.token })).json().grants;
    expect(grants[0].client).toMatchObject({ client_id: clientId, registration: 'metadata_document' });
  });

  it('refuses with invalid_client, never a redirect: an invalid or unreachable document, or a private address', async () => {
    const refusals = [
      serve('/clients/other-id.json', { client_id: `${base}/clients/someone-else.json` }),
      serve('/clients/no-name.json', { client_name: '' }),
      serve('/clients/secret.json', { client_secret: 'x', token_endpoint_auth_method: 'client_secret_basic' }),
      serve('/clients/implicit.json', { response_types: ['token'] }),
      serve('/clients/gone.json', {}, 404),
      `${base}/clients/never-served.json`,
    ];
    for (const clientId of refusals) {
      const res = await call(t.app, 'GET', `/oauth/authorize?${authorizeQuery(clientId)}`);
      expect(res.statusCode, clientId).toBe(400);
      expect(res.headers.location, clientId).toBeUndefined();
      expect(res.json().error, clientId).toBe('invalid_client');
    }
    // A redirect URI the document does not list is invalid_request, still without a redirect.
    const good = serve('/clients/fine.json');
    const query = authorizeQuery(good);
    query.set('redirect_uri', 'http://127.0.0.1:4567/elsewhere');
    const wrong = await call(t.app, 'GET', `/oauth/authorize?${query}`);
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error).toBe('invalid_request');

    // Without TASKHOOK_ALLOW_PRIVATE_URLS the guard refuses the loopback document before any request.
    const before = fetched;
    const refused = await call(guarded.app, 'GET', `/oauth/authorize?${authorizeQuery(serve('/clients/p.json'))}`);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_client');
    expect(fetched).toBe(before);
    // An http URL is no metadata document: an unknown client.
    const plain = await call(t.app, 'GET', `/oauth/authorize?${authorizeQuery('http://127.0.0.1:1/c.json')}`);
    expect(plain.json().error).toBe('invalid_client');
  });
});
