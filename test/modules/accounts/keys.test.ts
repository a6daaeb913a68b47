import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSecretBox, SealedSecretError, toBase62 } from '../../../src/lib/crypto.js';
import {
  generateIngestToken,
  generatePlatformKey,
  isWellFormedPlatformKey,
  KEY_LENGTH,
  KEY_PREFIX,
  type PresentedCredential,
  platformKeyPrefix,
  readCredential,
} from '../../../src/modules/accounts/accounts-fns.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An independent base62 reading (BigInt), so toBase62 is not checked against itself. */
function fromBase62(text: string): bigint {
  let n = 0n;
  for (const ch of text) {
    const digit = ALPHABET.indexOf(ch);
    if (digit < 0) throw new Error(`not base62: ${ch}`);
    n = n * 62n + BigInt(digit);
  }
  return n;
}

/** The checksum of docs/api.md §3.4, written out from that text rather than from the source. */
function expectedChecksum(body: string): string {
  let n = BigInt(crc32(body));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(6, '0');
}

/** A key with the character at `index` replaced by `replacement`. */
function mutate(key: string, index: number, replacement: string): string {
  return key.slice(0, index) + replacement + key.slice(index + 1);
}

describe('platform key format', () => {
  it('is sk_service_ + 43 base62 characters + a 6-character base62 CRC32 of everything before it', () => {
    const key = generatePlatformKey();
    expect(KEY_PREFIX).toBe('sk_service_');
    expect(KEY_LENGTH).toBe(60);
    expect(key).toHaveLength(60);
    expect(key).toMatch(/^sk_service_[0-9A-Za-z]{49}$/);
    const body = key.slice(0, 54);
    expect(key.slice(54)).toBe(expectedChecksum(body));
    expect(fromBase62(key.slice(54))).toBe(BigInt(crc32(body)));
    expect(platformKeyPrefix(key)).toBe(key.slice(0, 16));
    expect(isWellFormedPlatformKey(key)).toBe(true);
  });

  it('generates a different key every time', () => {
    const keys = new Set(Array.from({ length: 200 }, () => generatePlatformKey()));
    expect(keys.size).toBe(200);
  });

  it('refuses every one-character change of a valid key, at every position', () => {
    const key = generatePlatformKey();
    for (let i = 0; i < key.length; i++) {
      const original = key[i] as string;
      const replacement = original === 'a' ? 'b' : 'a';
      expect(isWellFormedPlatformKey(mutate(key, i, replacement)), `position ${i}`).toBe(false);
    }
  });

  it.each([
    ['empty', ''],
    ['prefix only', 'sk_service_'],
    ['one character short', (k: string) => k.slice(0, -1)],
    ['one character long', (k: string) => `${k}0`],
    ['another prefix', (k: string) => `sk_other__${k.slice(10)}`],
    ['upper-case prefix', (k: string) => `SK_SERVICE_${k.slice(11)}`],
    ['a non-base62 character', (k: string) => mutate(k, 20, '-')],
    ['surrounding space', (k: string) => ` ${k}`],
  ])('refuses a key that is %s', (_name, make) => {
    const key = typeof make === 'string' ? make : make(generatePlatformKey());
    expect(isWellFormedPlatformKey(key)).toBe(false);
  });

  it('property: every generated key is well formed and any one-character mutation is refused', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 59 }),
        fc.constantFrom(...ALPHABET.split(''), '_', '-', ' ', 'é'),
        (index, replacement) => {
          const key = generatePlatformKey();
          expect(isWellFormedPlatformKey(key)).toBe(true);
          fc.pre(key[index] !== replacement);
          expect(isWellFormedPlatformKey(mutate(key, index, replacement))).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('toBase62', () => {
  it.each([
    [0, 1, '0'],
    [0, 6, '000000'],
    [9, 1, '9'],
    [10, 1, 'A'],
    [35, 1, 'Z'],
    [36, 1, 'a'],
    [61, 1, 'z'],
    [62, 1, '10'],
    [62 * 62 - 1, 2, 'zz'],
    [62 * 62, 6, '000100'],
  ])('writes %i with width %i as %s', (value, width, expected) => {
    expect(toBase62(value, width)).toBe(expected);
  });

  it('writes the largest CRC32 in 6 characters', () => {
    const text = toBase62(0xffffffff, 6);
    expect(text).toHaveLength(6);
    expect(fromBase62(text)).toBe(0xffffffffn);
  });

  it('property: reads back to the same number, padded to the width', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 1, max: 8 }), (value, width) => {
        const text = toBase62(value, width);
        expect(text.length).toBeGreaterThanOrEqual(width);
        expect(text).toMatch(/^[0-9A-Za-z]+$/);
        expect(fromBase62(text)).toBe(BigInt(value));
      }),
    );
  });
});

describe('readCredential', () => {
  const key = generatePlatformKey();
  const badKey = mutate(key, 30, key[30] === 'a' ? 'b' : 'a');
  const token = generateIngestToken();

  const table: Array<[string, Record<string, string | string[] | undefined>, PresentedCredential]> = [
    ['no headers', {}, { kind: 'none' }],
    ['an empty Authorization', { authorization: '' }, { kind: 'none' }],
    ['a blank Authorization', { authorization: '   ' }, { kind: 'none' }],
    ['a key in x-service-api-key', { 'x-service-api-key': key }, { kind: 'platform_key', value: key }],
    ['a key in x-api-key', { 'x-api-key': key }, { kind: 'platform_key', value: key }],
    ['a key with spaces around it', { 'x-api-key': `  ${key} ` }, { kind: 'platform_key', value: key }],
    ['a key as Bearer', { authorization: `Bearer ${key}` }, { kind: 'platform_key', value: key }],
    ['a key as lower-case bearer', { authorization: `bearer ${key}` }, { kind: 'platform_key', value: key }],
    ['a bad checksum in x-service-api-key', { 'x-service-api-key': badKey }, { kind: 'malformed' }],
    ['a bad checksum in x-api-key', { 'x-api-key': badKey }, { kind: 'malformed' }],
    ['a bad checksum as Bearer', { authorization: `Bearer ${badKey}` }, { kind: 'malformed' }],
    ['an empty x-api-key', { 'x-api-key': '' }, { kind: 'malformed' }],
    ['a JWT-looking Bearer', { authorization: 'Bearer a.b.c' }, { kind: 'jwt', value: 'a.b.c' }],
    ['any other Bearer text', { authorization: 'Bearer whatever' }, { kind: 'jwt', value: 'whatever' }],
    ['a bare ingest token', { authorization: token }, { kind: 'ingest_token', value: token }],
    [
      'an upper-case ingest token',
      { authorization: token.toUpperCase() },
      { kind: 'ingest_token', value: token.toLowerCase() },
    ],
    ['a bare non-UUID', { authorization: 'hello' }, { kind: 'malformed' }],
    ['Basic credentials', { authorization: 'Basic dXNlcjpwYXNz' }, { kind: 'malformed' }],
    ['a Bearer with two words', { authorization: 'Bearer a b' }, { kind: 'malformed' }],
    ['"Bearer" alone', { authorization: 'Bearer' }, { kind: 'malformed' }],
    ['a repeated Authorization', { authorization: ['Bearer a', 'Bearer b'] }, { kind: 'malformed' }],
    [
      'x-service-api-key before Authorization',
      { 'x-service-api-key': key, authorization: 'Bearer a.b.c' },
      { kind: 'platform_key', value: key },
    ],
    [
      'a malformed x-api-key even with a valid Authorization',
      { 'x-api-key': 'nope', authorization: `Bearer ${key}` },
      { kind: 'malformed' },
    ],
  ];

  it.each(table)('classifies %s', (_name, headers, expected) => {
    expect(readCredential(headers)).toEqual(expected);
  });
});

describe('createSecretBox', () => {
  const secret = 'an encryption key of at least thirty-two characters';

  it('round-trips any text, with a fresh IV every time', () => {
    const box = createSecretBox(secret);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (plaintext) => {
        const sealed = box.seal(plaintext);
        expect(sealed).toMatch(/^v2\.[^.]+\./);
        expect(sealed).not.toContain(plaintext.length > 3 ? plaintext : '\u0000');
        expect(box.open(sealed)).toBe(plaintext);
        expect(createSecretBox(secret).open(sealed)).toBe(plaintext);
      }),
    );
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('refuses a sealed secret with any byte changed', () => {
    const box = createSecretBox(secret);
    const sealed = box.seal('whsec_the-plaintext-secret');
    const head = sealed.slice(0, sealed.lastIndexOf('.') + 1);
    const raw = Buffer.from(sealed.slice(head.length), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const tampered = Buffer.from(raw);
      tampered[i] = (tampered[i] as number) ^ 0x01;
      expect(() => box.open(`${head}${tampered.toString('base64url')}`), `byte ${i}`).toThrow();
    }
  });

  it('refuses a truncated secret, an unknown format and another key', () => {
    const box = createSecretBox(secret);
    const sealed = box.seal('payload');
    expect(() => box.open(sealed.slice(0, -4))).toThrow();
    expect(() => box.open(`v3.${sealed.slice(3)}`)).toThrow(SealedSecretError);
    expect(() => createSecretBox(`${secret}!`).open(sealed)).toThrow(SealedSecretError);
  });
});
