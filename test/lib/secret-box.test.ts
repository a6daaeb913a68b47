import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox, SealedSecretError } from '../../src/lib/crypto.js';

const OLD = 'an-old-encryption-key-of-more-than-32-characters';
const NEW = 'a-new-encryption-key-of-more-than-32-characters!';

/** A value as the earlier version sealed it (`v1.`, no key id), written independently. */
function sealV1(key: string, plaintext: string): string {
  const derived = Buffer.from(hkdfSync('sha256', key, 'taskhook', 'secret-box-v1', 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', derived, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

describe('sealed secrets and key rotation', () => {
  it('carry the id of the key that sealed them, so a previous key still opens them after a rotation', () => {
    const sealed = createSecretBox(OLD).seal('whsec_abc');
    expect(sealed).toMatch(/^v2\.[A-Za-z0-9_-]{8}\./);
    expect(createSecretBox(NEW).seal('x').split('.')[1]).not.toBe(sealed.split('.')[1]);
    const rotated = createSecretBox(NEW, [OLD]);
    expect(rotated.open(sealed)).toBe('whsec_abc');
    expect(rotated.isCurrent(sealed)).toBe(false);
    expect(rotated.isCurrent(rotated.seal('y'))).toBe(true);
  });

  it('refuse with a SealedSecretError naming the variable when no configured key opens a value', () => {
    const sealed = createSecretBox(OLD).seal('provider key');
    expect(() => createSecretBox(NEW).open(sealed)).toThrow(SealedSecretError);
    expect(() => createSecretBox(NEW).open(sealed)).toThrow(/TASKHOOK_ENCRYPTION_KEY_PREVIOUS/);
    expect(() => createSecretBox(NEW).open(sealV1(OLD, 'x'))).toThrow(SealedSecretError);
    expect(() => createSecretBox(NEW).open('garbage')).toThrow(SealedSecretError);
  });

  it('open values sealed before key ids existed with the current or a previous key', () => {
    expect(createSecretBox(OLD).open(sealV1(OLD, 'first'))).toBe('first');
    expect(createSecretBox(NEW, [OLD]).open(sealV1(OLD, 'second'))).toBe('second');
    expect(createSecretBox(OLD).isCurrent(sealV1(OLD, 'third'))).toBe(false);
  });
});
