import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';

export const JWT_ISSUER = 'taskhook';
export const JWT_AUDIENCE = 'taskhook-api';
export const JWT_LIFETIME_SECONDS = 24 * 60 * 60;

export interface SessionClaims {
  userUuid: string;
  /** The user's token version at issue time; a password change bumps it, voiding older tokens. */
  tokenVersion: number;
}

/** Issues and checks user session JWTs: HS256 only, `iss`/`aud` pinned, 24 h lifetime. */
export function createSessionTokens(secret: string, now: () => number = Date.now) {
  const key = new TextEncoder().encode(secret);
  return {
    async issue(claims: SessionClaims): Promise<string> {
      const iat = Math.floor(now() / 1000);
      return new SignJWT({ tv: claims.tokenVersion })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.userUuid)
        .setIssuer(JWT_ISSUER)
        .setAudience(JWT_AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + JWT_LIFETIME_SECONDS)
        .sign(key);
    },
    /** The claims of a valid token, or null for anything invalid, expired or foreign. */
    async verify(token: string): Promise<SessionClaims | null> {
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: JWT_ISSUER,
          audience: JWT_AUDIENCE,
          requiredClaims: ['sub', 'exp', 'iat'],
          currentDate: new Date(now()),
        });
        if (typeof payload.sub !== 'string' || typeof payload.tv !== 'number') return null;
        return { userUuid: payload.sub, tokenVersion: payload.tv };
      } catch (err) {
        if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return null;
        throw err;
      }
    },
  };
}

export type SessionTokens = ReturnType<typeof createSessionTokens>;
