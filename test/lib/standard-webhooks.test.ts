import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/lib/standard-webhooks.js';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What a receiver gets: the three Standard Webhooks headers. */
function headers(id: string, timestamp: number, signature: string) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

describe('signatureHeader (Standard Webhooks)', () => {
  it('verifies with the standardwebhooks package, for any id and body', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.jsonValue(), fc.uint8Array({ minLength: 1, maxLength: 64 }), (id, value, key) => {
        const secret = `whsec_${Buffer.from(key).toString('base64')}`;
        const body = JSON.stringify(value) ?? 'null';
        const timestamp = nowSeconds();
        const signature = signatureHeader(id, timestamp, body, [secret]);
        expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        expect(() => new Webhook(secret).verify(body, headers(id, timestamp, signature))).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  it('matches what the standardwebhooks package signs', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const body = '{"type":"task.completed"}';
    expect(signatureHeader('msg_1', timestamp, body, [secret])).toBe(
      new Webhook(secret).sign('msg_1', new Date(timestamp * 1000), body),
    );
  });

  it('fails verification for another body, id, timestamp or secret', () => {
    const secret = newSecret();
    const timestamp = nowSeconds();
    const body = '{"a":1}';
    const signature = signatureHeader('msg_1', timestamp, body, [secret]);
    const hook = new Webhook(secret);
    expect(() => hook.verify('{"a":2}', headers('msg_1', timestamp, signature))).toThrow('No matching signature');
    expect(() => hook.verify(body, headers('msg_2', timestamp, signature))).toThrow('No matching signature');
    expect(() => hook.verify(body, headers('msg_1', timestamp - 1, signature))).toThrow('No matching signature');
    expect(() => new Webhook(newSecret()).verify(body, headers('msg_1', timestamp, signature))).toThrow(
      'No matching signature',
    );
  });

  it('signs with two secrets: two space-separated v1 entries, each verifying on its own', () => {
    const [oldSecret, newOne] = [newSecret(), newSecret()];
    const timestamp = nowSeconds();
    const body = '{"type":"task.cancelled"}';
    const signature = signatureHeader('msg_9', timestamp, body, [newOne, oldSecret]);
    const entries = signature.split(' ');
    expect(entries).toHaveLength(2);
    for (const entry of entries) expect(entry).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(entries[0]).not.toBe(entries[1]);
    for (const secret of [oldSecret, newOne]) {
      expect(() => new Webhook(secret).verify(body, headers('msg_9', timestamp, signature))).not.toThrow();
    }
    // Each entry alone is the single-secret signature.
    expect(entries).toEqual([
      signatureHeader('msg_9', timestamp, body, [newOne]),
      signatureHeader('msg_9', timestamp, body, [oldSecret]),
    ]);
    expect(() => new Webhook(newSecret()).verify(body, headers('msg_9', timestamp, signature))).toThrow();
  });
});
