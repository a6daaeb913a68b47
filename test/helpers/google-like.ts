import { OAuth2Server } from 'oauth2-mock-server';

type Claims = Record<string, unknown>;

interface TokenRequest {
  authorization: string | undefined;
  body: Record<string, string>;
}

/** A Google-shaped OpenID provider on 127.0.0.1 (oauth2-mock-server): discovery, JWKS, authorize, token. */
export interface GoogleLike {
  issuer: string;
  server: OAuth2Server;
  /** Claims the next ID tokens carry on top of the provider's own (sub, email, email_verified, …). */
  identity: Claims;
  /** Changes the next ID token's header and claims after the provider set them (nonce, aud, iss, exp…). */
  tamper: ((header: Claims, payload: Claims) => void) | null;
  /** Replaces the next token answer. */
  answer: ((body: Claims) => { status: number; body: Claims }) | null;
  tokenRequests: TokenRequest[];
  close(): Promise<void>;
}

/** Starts the provider; `issuer` is what its discovery document names. */
export async function startGoogleLike(): Promise<GoogleLike> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  const state: GoogleLike = {
    issuer: '',
    server,
    identity: {},
    tamper: null,
    answer: null,
    tokenRequests: [],
    close: () => server.stop(),
  };
  server.service.on('beforeTokenSigning', (token: { header: Claims; payload: Claims }) => {
    if ('scope' in token.payload) return; // the access token, not the ID token
    Object.assign(token.payload, state.identity);
    state.tamper?.(token.header, token.payload);
  });
  server.service.on(
    'beforeResponse',
    (response: { body: Claims; statusCode: number }, req: { headers: Claims; body: Record<string, string> }) => {
      state.tokenRequests.push({
        authorization: req.headers.authorization as string | undefined,
        body: { ...req.body },
      });
      if (state.answer) {
        const replaced = state.answer(response.body);
        response.statusCode = replaced.status;
        response.body = replaced.body;
      }
    },
  );
  await server.start(0, '127.0.0.1');
  state.issuer = `http://127.0.0.1:${server.address().port}`;
  server.issuer.url = state.issuer;
  return state;
}
