import { hash, verify } from '@node-rs/argon2';

// argon2id at OWASP's minimum: m = 19 MiB, t = 2, p = 1. (2 is Algorithm.Argon2id; the
// package declares it as an ambient const enum, which isolated modules cannot import.)
const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** An argon2id PHC string for the password. */
export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS as Parameters<typeof hash>[1]);
}

let dummyHash: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (unknown user) it still spends the time
 * of one verification, so response time does not reveal which e-mails have accounts.
 */
export async function checkPassword(stored: string | undefined, password: string): Promise<boolean> {
  if (stored === undefined) {
    dummyHash ??= hashPassword('taskhook-timing-equaliser');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
