import { randomBytes } from 'node:crypto';
import { type Dispatcher, request } from 'undici';
import type { Db } from '../../db/connect.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { randomBase62, safeEqual, sha256Hex } from '../../lib/crypto.js';
import { checkOutboundUrl, type OutboundPolicy } from '../../lib/outbound.js';
import { type Clock, iso } from '../../lib/time.js';
import {
  type ClientInfo,
  clientFromDocument,
  isMetadataDocumentId,
  OAuthError,
  readGrantTypes,
  readName,
  readRedirectUris,
  readWebUrl,
  responseTypesOk,
  SCOPE,
} from './mcp-oauth-fns.js';
import type { McpOAuthRepo } from './mcp-oauth-repo.js';

const DOCUMENT_TIMEOUT_MS = 5000;
const DOCUMENT_MAX_BYTES = 5120;
const DOCUMENT_CACHE_MS = 5 * 60_000;
const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;

type Headers = Record<string, string | string[] | undefined>;

/**
 * The clients of the authorization server: Client ID Metadata Documents (fetched through the SSRF
 * guard, 5 s, 5120 bytes, no redirects, cached up to 5 minutes), clients registered dynamically
 * (RFC 7591; secrets stored as hashes), and client authentication at the token and revocation
 * endpoints.
 */
export function createClients(deps: {
  db: Db;
  repo: Pick<McpOAuthRepo, 'insertClient' | 'findClient'>;
  clock: Clock;
  policy: OutboundPolicy;
  dispatcher: Dispatcher;
}) {
  const cache = new Map<string, { client: ClientInfo | string; until: number }>();

  async function fetchDocument(url: string): Promise<ClientInfo | string> {
    try {
      await checkOutboundUrl(url, deps.policy);
    } catch (err) {
      return `the document URL is refused: ${(err as Error).message}`;
    }
    const aborted = AbortSignal.timeout(DOCUMENT_TIMEOUT_MS);
    try {
      const answer = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'taskhook' },
        dispatcher: deps.dispatcher,
        signal: aborted,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of answer.body) {
        size += (chunk as Buffer).length;
        if (size > DOCUMENT_MAX_BYTES) {
          answer.body.destroy();
          return 'the document is larger than 5120 bytes';
        }
        chunks.push(chunk as Buffer);
      }
      if (answer.statusCode !== 200) return `the document answered ${answer.statusCode}`;
      let doc: unknown;
      try {
        doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return 'the document is not JSON';
      }
      const client = clientFromDocument(url, doc);
      const maxAge = cacheMs(answer.headers['cache-control']);
      if (maxAge > 0) cache.set(url, { client, until: deps.clock.now() + maxAge });
      return client;
    } catch {
      return 'the document could not be fetched';
    }
  }

  /**
   * The client a `client_id` names.
   * @throws OAuthError 400 invalid_client when it is unknown, or a metadata document that cannot be fetched or is invalid.
   */
  async function resolve(clientId: string): Promise<ClientInfo & { secretHash: string | null }> {
    if (isMetadataDocumentId(clientId)) {
      const cached = cache.get(clientId);
      const client = cached && cached.until > deps.clock.now() ? cached.client : await fetchDocument(clientId);
      if (typeof client === 'string')
        throw new OAuthError(400, 'invalid_client', `Client ID Metadata Document: ${client}`);
      return { ...client, secretHash: null };
    }
    const row = clientId.length <= 128 ? await deps.repo.findClient(deps.db.kysely, clientId) : undefined;
    if (!row) throw new OAuthError(400, 'invalid_client', 'Unknown client_id');
    return {
      client_id: row.client_id,
      client_name: row.client_name,
      client_uri: row.client_uri,
      logo_uri: row.logo_uri,
      registration: 'dynamic',
      redirect_uris: fromDbJson<string[]>(row.redirect_uris),
      grant_types: fromDbJson<string[]>(row.grant_types),
      auth_method: row.auth_method as ClientInfo['auth_method'],
      secretHash: row.secret_hash,
    };
  }

  /**
   * Client authentication at the token and revocation endpoints (RFC 6749 §2.3), by the client's
   * registered method.
   * @throws OAuthError 401 invalid_client (unknown client, missing or wrong secret, another method).
   */
  async function authenticate(headers: Headers, form: Record<string, string>): Promise<ClientInfo> {
    const basic = basicCredentials(headers.authorization);
    const refuse = () => new OAuthError(401, 'invalid_client', 'Client authentication failed');
    if (basic === 'malformed') throw refuse();
    const clientId = basic ? basic.id : form.client_id;
    if (!clientId) throw refuse();
    let client: ClientInfo & { secretHash: string | null };
    try {
      client = await resolve(clientId);
    } catch (err) {
      if (err instanceof OAuthError) throw refuse();
      throw err;
    }
    if (basic && form.client_id !== undefined && form.client_id !== basic.id) throw refuse();
    const secret = basic ? basic.secret : form.client_secret;
    const method = basic ? 'client_secret_basic' : secret !== undefined ? 'client_secret_post' : 'none';
    if (method !== client.auth_method) throw refuse();
    if (method !== 'none' && !(client.secretHash && secret && safeEqual(sha256Hex(secret), client.secretHash))) {
      throw refuse();
    }
    return client;
  }

  /**
   * Dynamic Client Registration (RFC 7591).
   * @throws OAuthError 400 invalid_redirect_uri or invalid_client_metadata.
   */
  async function register(body: unknown): Promise<Record<string, unknown>> {
    const bad = (why: string) => new OAuthError(400, 'invalid_client_metadata', why);
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw bad('The body must be a JSON object');
    const m = body as Record<string, unknown>;
    const redirects = readRedirectUris(m.redirect_uris);
    if (!redirects) {
      throw new OAuthError(400, 'invalid_redirect_uri', 'redirect_uris must be 1 to 10 https or loopback http URIs');
    }
    const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
    if (!AUTH_METHODS.includes(method as never)) throw bad('Unsupported token_endpoint_auth_method');
    const grants = readGrantTypes(m.grant_types);
    if (!grants) throw bad('grant_types must hold authorization_code and nothing but refresh_token besides');
    if (!responseTypesOk(m.response_types)) throw bad('response_types must be ["code"]');
    const name = readName(m.client_name);
    const clientUri = readWebUrl(m.client_uri);
    const logoUri = readWebUrl(m.logo_uri);
    if (name === null || clientUri === null || logoUri === null)
      throw bad('client_name, client_uri or logo_uri is invalid');
    if (m.scope !== undefined && typeof m.scope !== 'string') throw bad('scope must be a string');
    const appType = m.application_type;
    if (appType !== undefined && appType !== 'native' && appType !== 'web')
      throw bad('application_type must be native or web');
    const clientId = `mcpc_${randomBase62(32)}`;
    const secret = method === 'none' ? null : randomBytes(32).toString('base64url');
    const now = deps.clock.now();
    await deps.repo.insertClient(deps.db.kysely, {
      client_id: clientId,
      client_name: name ?? null,
      client_uri: clientUri ?? null,
      logo_uri: logoUri ?? null,
      application_type: (appType as string | undefined) ?? null,
      redirect_uris: toDbJson(redirects),
      grant_types: toDbJson(grants),
      auth_method: method as string,
      secret_hash: secret && sha256Hex(secret),
      created_at: iso(now),
    });
    return {
      client_id: clientId,
      client_id_issued_at: Math.floor(now / 1000),
      redirect_uris: redirects,
      token_endpoint_auth_method: method,
      grant_types: grants,
      response_types: ['code'],
      scope: SCOPE,
      ...(name === undefined ? {} : { client_name: name }),
      ...(clientUri === undefined ? {} : { client_uri: clientUri }),
      ...(logoUri === undefined ? {} : { logo_uri: logoUri }),
      ...(appType === undefined ? {} : { application_type: appType }),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    };
  }

  return { resolve, authenticate, register };
}

export type Clients = ReturnType<typeof createClients>;

/** How long a document may be cached: 5 minutes, less when Cache-Control says so. */
function cacheMs(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  if (/no-store|no-cache/i.test(value)) return 0;
  const maxAge = /max-age=(\d+)/i.exec(value);
  return maxAge?.[1] ? Math.min(DOCUMENT_CACHE_MS, Number(maxAge[1]) * 1000) : DOCUMENT_CACHE_MS;
}

/** `Authorization: Basic` client credentials (form-urlencoded id and secret), null when not Basic. */
function basicCredentials(header: string | string[] | undefined): { id: string; secret: string } | null | 'malformed' {
  if (typeof header !== 'string' || !/^Basic\s/i.test(header)) return Array.isArray(header) ? 'malformed' : null;
  const decoded = Buffer.from(header.replace(/^Basic\s+/i, '').trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return 'malformed';
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    return 'malformed';
  }
}
