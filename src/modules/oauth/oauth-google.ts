import { createRemoteJWKSet, type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../lib/time.js';
import { GOOGLE_SCOPE, isEmailVerifiedClaim, pkceChallenge, withParams } from './oauth-fns.js';
import {
  asObject,
  callProvider,
  loginFailed,
  PROVIDER_TIMEOUT_MS,
  readTokenAnswer,
  unavailable,
} from './oauth-http.js';
import type { LoginAttempt, ProviderClient, ProviderIdentity } from './oauth-types.js';

const LABEL = 'Google';
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
const JWKS_REFETCH_MS = 60 * 1000;
const CLOCK_LEEWAY_SECONDS = 60;

interface Discovery {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  algorithms: string[];
  authMethod: 'client_secret_basic' | 'client_secret_post';
}

const httpUrl = (v: unknown): v is string => typeof v === 'string' && /^https?:\/\/\S+$/.test(v);
const stripSlash = (v: string) => v.replace(/\/+$/, '');

/** The parts of a discovery document we rely on, or null when it lacks them. */
function readDiscovery(json: unknown, configuredIssuer: string): Discovery | null {
  const doc = asObject(json);
  if (!doc || typeof doc.issuer !== 'string' || stripSlash(doc.issuer) !== configuredIssuer) return null;
  const { authorization_endpoint: auth, token_endpoint: token, jwks_uri: jwks } = doc;
  if (!httpUrl(auth) || !httpUrl(token) || !httpUrl(jwks)) return null;
  const listed = Array.isArray(doc.id_token_signing_alg_values_supported)
    ? doc.id_token_signing_alg_values_supported.filter((a): a is string => typeof a === 'string')
    : ['RS256']; // OpenID's default when the document names none
  // `none` and the MAC algorithms (keyed with the client secret) never sign an identity here.
  const algorithms = listed.filter((a) => a !== 'none' && !a.startsWith('HS'));
  const methods = Array.isArray(doc.token_endpoint_auth_methods_supported)
    ? doc.token_endpoint_auth_methods_supported
    : [];
  const authMethod =
    methods.includes('client_secret_post') && !methods.includes('client_secret_basic')
      ? 'client_secret_post'
      : 'client_secret_basic';
  return {
    issuer: doc.issuer,
    authorizationEndpoint: auth,
    tokenEndpoint: token,
    jwksUri: jwks,
    algorithms,
    authMethod,
  };
}

/** Failures of fetching the key set (the provider's fault: 502) as opposed to a bad token (401). */
function isKeySetFailure(err: unknown): boolean {
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) return true;
  if (err instanceof joseErrors.JOSEError) return err.code === 'ERR_JOSE_GENERIC';
  return true;
}

/** RFC 6749 §2.3.1: the client id and secret are form-encoded before they go into Basic. */
function basicAuth(clientId: string, clientSecret: string): string {
  const enc = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64')}`;
}

/**
 * Google login over OpenID Connect: endpoints from the issuer's discovery document (cached an
 * hour), ID tokens verified against its key set with jose (cached an hour; an unknown `kid`
 * refetches it at most once a minute).
 */
export function createGoogleClient(deps: {
  clientId: string;
  clientSecret: string;
  issuer: string;
  dispatcher: Dispatcher;
  clock: Clock;
}): ProviderClient {
  let cached: { at: number; doc: Discovery } | undefined;
  let keys: { uri: string; set: ReturnType<typeof createRemoteJWKSet> } | undefined;

  async function discovery(): Promise<Discovery> {
    if (cached && deps.clock.now() - cached.at < DISCOVERY_TTL_MS) return cached.doc;
    const url = `${deps.issuer}/.well-known/openid-configuration`;
    const answer = await callProvider(deps.dispatcher, LABEL, url, {
      method: 'GET',
      headers: { accept: 'application/json' },
    });
    const doc = answer.status === 200 ? readDiscovery(answer.json, deps.issuer) : null;
    if (!doc) throw unavailable(LABEL, 'unusable discovery document');
    cached = { at: deps.clock.now(), doc };
    return doc;
  }

  function keySet(doc: Discovery) {
    if (keys?.uri !== doc.jwksUri) {
      const set = createRemoteJWKSet(new URL(doc.jwksUri), {
        timeoutDuration: PROVIDER_TIMEOUT_MS,
        cooldownDuration: JWKS_REFETCH_MS,
        cacheMaxAge: DISCOVERY_TTL_MS,
      });
      keys = { uri: doc.jwksUri, set };
    }
    return keys.set;
  }

  async function verifyIdToken(doc: Discovery, idToken: unknown, nonce: string | null): Promise<JWTPayload> {
    const invalid = loginFailed(LABEL, 'invalid ID token');
    if (typeof idToken !== 'string' || doc.algorithms.length === 0) throw invalid;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, keySet(doc), {
        issuer: doc.issuer,
        audience: deps.clientId,
        algorithms: doc.algorithms,
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        requiredClaims: ['iat', 'exp', 'sub'],
        currentDate: new Date(deps.clock.now()),
      }));
    } catch (err) {
      if (isKeySetFailure(err)) throw unavailable(LABEL, 'key set not available');
      throw invalid;
    }
    // Several audiences: the token must also say it was issued to us (OpenID Core §3.1.3.7).
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== deps.clientId) throw invalid;
    if (nonce === null || payload.nonce !== nonce) throw invalid;
    if (typeof payload.sub !== 'string' || payload.sub === '') throw invalid;
    return payload;
  }

  return {
    name: 'google',
    async authorizationUrl(attempt: LoginAttempt): Promise<string> {
      const doc = await discovery();
      return withParams(doc.authorizationEndpoint, {
        response_type: 'code',
        client_id: deps.clientId,
        redirect_uri: attempt.redirectUri,
        scope: GOOGLE_SCOPE,
        state: attempt.state,
        code_challenge: pkceChallenge(attempt.codeVerifier),
        code_challenge_method: 'S256',
        nonce: attempt.nonce ?? '',
      });
    },

    async identify(code: string, attempt: LoginAttempt): Promise<ProviderIdentity> {
      const doc = await discovery();
      const form: Record<string, string> = {
        grant_type: 'authorization_code',
        code,
        redirect_uri: attempt.redirectUri,
        code_verifier: attempt.codeVerifier,
      };
      const headers: Record<string, string> = { accept: 'application/json' };
      if (doc.authMethod === 'client_secret_basic') headers.authorization = basicAuth(deps.clientId, deps.clientSecret);
      else Object.assign(form, { client_id: deps.clientId, client_secret: deps.clientSecret });
      const answer = await callProvider(deps.dispatcher, LABEL, doc.tokenEndpoint, { method: 'POST', headers, form });
      const tokens = readTokenAnswer(LABEL, answer);
      const claims = await verifyIdToken(doc, tokens.id_token, attempt.nonce);
      return {
        subject: claims.sub as string,
        email: typeof claims.email === 'string' && claims.email !== '' ? claims.email : null,
        emailVerified: isEmailVerifiedClaim(claims.email_verified),
      };
    },
  };
}
