import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  authenticateScheme,
  generateStandardSecret,
  parseStripeSignature,
  payloadDeliveryId,
  slackChallenge,
  standardSecretProblem,
  timestampFresh,
  verifySlackSignature,
  verifyStandardWebhook,
  verifyStripeSignature,
} from '../../../src/modules/triggers/signature-schemes-fns.js';

const NOW_MS = 1_790_000_000_000;
const NOW_S = NOW_MS / 1000;
const TOLERANCE = 300;

/** The bytes with one bit of the byte at `at` flipped. */
function flip(bytes: Uint8Array, at: number): Buffer {
  const out = Buffer.from(bytes);
  out[at % out.length] = (out[at % out.length] ?? 0) ^ 1;
  return out;
}

const hmacHex = (key: string | Buffer, ...parts: Array<string | Uint8Array>) => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};
const hmacB64 = (key: Buffer, ...parts: Array<string | Uint8Array>) => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest('base64');
};

/** A Standard Webhooks signature as the spec defines it (independent of the code under test). */
function standardSign(secret: string, id: string, ts: number, body: Uint8Array) {
  return `v1,${hmacB64(Buffer.from(secret.slice(6), 'base64'), `${id}.${ts}.`, body)}`;
}
const stripeHeader = (secret: string, t: number, body: Uint8Array) => `t=${t},v1=${hmacHex(secret, `${t}.`, body)}`;
const slackSig = (secret: string, ts: number, body: Uint8Array) => `v0=${hmacHex(secret, `v0:${ts}:`, body)}`;

const bodies = fc.uint8Array({ minLength: 1, maxLength: 300 });
const secretText = fc.string({ minLength: 1, maxLength: 60 }).filter((s) => !/\s/.test(s));
const standardSecrets = fc
  .uint8Array({ minLength: 24, maxLength: 64 })
  .map((b) => `whsec_${Buffer.from(b).toString('base64')}`);
const skew = fc.integer({ min: -TOLERANCE, max: TOLERANCE });
const stale = fc.oneof(
  fc.integer({ min: TOLERANCE + 1, max: 10 ** 7 }),
  fc.integer({ min: -(10 ** 7), max: -TOLERANCE - 1 }),
);
const ids = fc.stringMatching(/^msg_[A-Za-z0-9]{1,30}$/);

describe('timestamps and secrets', () => {
  it('accepts |now - t| <= tolerance and nothing else; digits only', () => {
    expect(timestampFresh(String(NOW_S - 300), NOW_MS, 300)).toBe(true);
    expect(timestampFresh(String(NOW_S + 300), NOW_MS, 300)).toBe(true);
    expect(timestampFresh(String(NOW_S - 301), NOW_MS, 300)).toBe(false);
    expect(timestampFresh(String(NOW_S + 301), NOW_MS, 300)).toBe(false);
    for (const bad of ['', ' 1', `${NOW_S}.0`, `-${NOW_S}`, `+${NOW_S}`, `${NOW_S}a`, '1e9', '0x10']) {
      expect(timestampFresh(bad, NOW_MS, 86_400 * 365 * 100)).toBe(false);
    }
  });

  it('knows the form of a Standard Webhooks secret', () => {
    expect(standardSecretProblem(generateStandardSecret())).toBeNull();
    expect(Buffer.from(generateStandardSecret().slice(6), 'base64')).toHaveLength(32);
    expect(standardSecretProblem(`whsec_${randomBytes(24).toString('base64')}`)).toBeNull();
    expect(standardSecretProblem(`whsec_${randomBytes(64).toString('base64')}`)).toBeNull();
    expect(standardSecretProblem(`whsec_${randomBytes(23).toString('base64')}`)).not.toBeNull();
    expect(standardSecretProblem(`whsec_${randomBytes(65).toString('base64')}`)).not.toBeNull();
    expect(standardSecretProblem(`whs_${randomBytes(32).toString('base64')}`)).not.toBeNull();
    expect(standardSecretProblem(`whsec_${randomBytes(32).toString('base64url')}!`)).not.toBeNull();
    expect(standardSecretProblem('whsec_')).not.toBeNull();
  });
});

describe('Standard Webhooks', () => {
  it('accepts what the standardwebhooks package signs (Webhook.sign), and agrees with its verify', () => {
    fc.assert(
      fc.property(standardSecrets, ids, fc.string({ unit: 'grapheme', minLength: 1 }), (secret, id, text) => {
        const wh = new Webhook(secret);
        const signature = wh.sign(id, new Date(NOW_MS), text);
        const headers = { id, timestamp: String(NOW_S), signature };
        expect(verifyStandardWebhook(headers, Buffer.from(text), [secret], NOW_MS, TOLERANCE)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('a correctly signed body passes within the tolerance; any flipped byte, other secret or stale time fails', () => {
    fc.assert(
      fc.property(
        standardSecrets,
        standardSecrets,
        ids,
        bodies,
        skew,
        stale,
        fc.nat(),
        (secret, other, id, body, ok, old, at) => {
          const ts = NOW_S + ok;
          const headers = { id, timestamp: String(ts), signature: standardSign(secret, id, ts, body) };
          expect(verifyStandardWebhook(headers, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(true);
          expect(verifyStandardWebhook(headers, flip(body, at), [secret], NOW_MS, TOLERANCE)).toBe(false);
          if (other !== secret) {
            expect(verifyStandardWebhook(headers, Buffer.from(body), [other], NOW_MS, TOLERANCE)).toBe(false);
          }
          const oldTs = NOW_S + old;
          const staleHeaders = { id, timestamp: String(oldTs), signature: standardSign(secret, id, oldTs, body) };
          expect(verifyStandardWebhook(staleHeaders, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(false);
          const otherId = { ...headers, id: `${id}x` };
          expect(verifyStandardWebhook(otherId, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('takes any v1 entry of the list, ignores other versions, refuses a list without a matching v1', () => {
    const secret = generateStandardSecret();
    const body = Buffer.from('{"a":1}');
    const good = standardSign(secret, 'msg_1', NOW_S, body);
    const sig = good.slice(3);
    const check = (signature: string) =>
      verifyStandardWebhook({ id: 'msg_1', timestamp: String(NOW_S), signature }, body, [secret], NOW_MS, TOLERANCE);
    expect(check(`v1,bogus ${good} v2,zzz`)).toBe(true);
    expect(check(`v1a,${sig}`)).toBe(false);
    expect(check(`v2,${sig}`)).toBe(false);
    expect(check(sig)).toBe(false);
    expect(check('')).toBe(false);
    expect(check(`v1,${sig.slice(0, -2)}`)).toBe(false);
    // The previous secret (24 h after a rotation) is tried too.
    expect(
      verifyStandardWebhook(
        { id: 'msg_1', timestamp: String(NOW_S), signature: good },
        body,
        [generateStandardSecret(), secret],
        NOW_MS,
        TOLERANCE,
      ),
    ).toBe(true);
  });
});

describe('Stripe', () => {
  it('a correctly signed body passes; any flipped byte, other secret or stale time fails', () => {
    fc.assert(
      fc.property(secretText, secretText, bodies, skew, stale, fc.nat(), (secret, other, body, ok, old, at) => {
        const t = NOW_S + ok;
        const header = stripeHeader(secret, t, body);
        expect(verifyStripeSignature(header, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(true);
        expect(verifyStripeSignature(header, flip(body, at), [secret], NOW_MS, TOLERANCE)).toBe(false);
        if (other !== secret)
          expect(verifyStripeSignature(header, Buffer.from(body), [other], NOW_MS, TOLERANCE)).toBe(false);
        const staleHeader = stripeHeader(secret, NOW_S + old, body);
        expect(verifyStripeSignature(staleHeader, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('reads the header as Stripe documents it: one t, any v1, v0 and unknown keys ignored', () => {
    const secret = 'whsec_test_secret';
    const body = Buffer.from('{"id":"evt_1"}');
    const v1 = hmacHex(secret, `${NOW_S}.`, body);
    const check = (header: string) => verifyStripeSignature(header, body, [secret], NOW_MS, TOLERANCE);
    expect(check(`t=${NOW_S},v1=${v1},v0=${'0'.repeat(64)}`)).toBe(true);
    expect(check(`t=${NOW_S},v1=${'0'.repeat(64)},v1=${v1},foo=bar`)).toBe(true);
    expect(check(`v1=${v1},t=${NOW_S}`)).toBe(true);
    expect(check(`t=${NOW_S},v0=${v1}`)).toBe(false);
    expect(check(`t=${NOW_S},t=${NOW_S},v1=${v1}`)).toBe(false);
    expect(check(`v1=${v1}`)).toBe(false);
    expect(check(`t=${NOW_S},v1=${v1},garbage`)).toBe(false);
    expect(check(`t=${NOW_S}x,v1=${v1}`)).toBe(false);
    expect(check('')).toBe(false);
    expect(parseStripeSignature(`t=1,v1=a,v1=b,v0=c`)).toEqual({ t: '1', v1: ['a', 'b'] });
  });
});

describe('Slack', () => {
  it('a correctly signed body passes; any flipped byte, other secret or stale time fails', () => {
    fc.assert(
      fc.property(secretText, secretText, bodies, skew, stale, fc.nat(), (secret, other, body, ok, old, at) => {
        const ts = String(NOW_S + ok);
        const headers = { timestamp: ts, signature: slackSig(secret, NOW_S + ok, body) };
        expect(verifySlackSignature(headers, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(true);
        expect(verifySlackSignature(headers, flip(body, at), [secret], NOW_MS, TOLERANCE)).toBe(false);
        if (other !== secret)
          expect(verifySlackSignature(headers, Buffer.from(body), [other], NOW_MS, TOLERANCE)).toBe(false);
        const staleHeaders = { timestamp: String(NOW_S + old), signature: slackSig(secret, NOW_S + old, body) };
        expect(verifySlackSignature(staleHeaders, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(false);
        // The timestamp is part of what is signed.
        const moved = { ...headers, timestamp: String(NOW_S + ok + 1) };
        expect(verifySlackSignature(moved, Buffer.from(body), [secret], NOW_MS, TOLERANCE)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it("verifies Slack's published example", () => {
    // api.slack.com/authentication/verifying-requests-from-slack
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    const ts = 1531420618;
    const body = Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    );
    const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
    const headers = { timestamp: String(ts), signature };
    expect(verifySlackSignature(headers, body, [secret], ts * 1000, TOLERANCE)).toBe(true);
  });
});

describe('authenticateScheme', () => {
  const body = Buffer.from('{"a":1}');
  const keys = (secret: string) => ({ secrets: [secret], nowMs: NOW_MS, toleranceSeconds: TOLERANCE });

  it('says missing when a header the scheme needs is absent, invalid when present but wrong', () => {
    const github = 'whs_x';
    const hub = `sha256=${hmacHex(github, body)}`;
    expect(authenticateScheme('github', { 'x-hub-signature-256': hub }, body, keys(github))).toBe('ok');
    expect(authenticateScheme('github', { 'x-webhook-secret': github }, body, keys(github))).toBe('missing');
    expect(authenticateScheme('github', { 'x-hub-signature-256': 'sha256=00' }, body, keys(github))).toBe('invalid');

    const std = generateStandardSecret();
    const full = {
      'webhook-id': 'm',
      'webhook-timestamp': String(NOW_S),
      'webhook-signature': standardSign(std, 'm', NOW_S, body),
    };
    expect(authenticateScheme('standard_webhooks', full, body, keys(std))).toBe('ok');
    for (const name of Object.keys(full)) {
      const partial: Record<string, string> = { ...full };
      delete partial[name];
      expect(authenticateScheme('standard_webhooks', partial, body, keys(std))).toBe('missing');
    }
    expect(authenticateScheme('standard_webhooks', { ...full, 'webhook-timestamp': 'soon' }, body, keys(std))).toBe(
      'invalid',
    );

    expect(authenticateScheme('stripe', {}, body, keys('whsec_s'))).toBe('missing');
    expect(authenticateScheme('stripe', { 'stripe-signature': 'nonsense' }, body, keys('whsec_s'))).toBe('invalid');

    const slack = { 'x-slack-signature': slackSig('sl', NOW_S, body), 'x-slack-request-timestamp': String(NOW_S) };
    expect(authenticateScheme('slack', slack, body, keys('sl'))).toBe('ok');
    expect(authenticateScheme('slack', { 'x-slack-signature': slack['x-slack-signature'] }, body, keys('sl'))).toBe(
      'missing',
    );
    expect(authenticateScheme('slack', { 'x-slack-request-timestamp': String(NOW_S) }, body, keys('sl'))).toBe(
      'missing',
    );
  });
});

describe('payload helpers', () => {
  it('finds the delivery id in the payload for stripe and slack only', () => {
    expect(payloadDeliveryId('stripe', { id: 'evt_1' })).toBe('evt_1');
    expect(payloadDeliveryId('slack', { event_id: 'Ev1' })).toBe('Ev1');
    for (const payload of [{ id: '' }, { id: 1 }, { id: null }, ['evt_1'], 'evt_1', null, {}]) {
      expect(payloadDeliveryId('stripe', payload)).toBeUndefined();
    }
    expect(payloadDeliveryId('slack', { id: 'evt_1' })).toBeUndefined();
    expect(payloadDeliveryId('secret', { id: 'evt_1' })).toBeUndefined();
    expect(payloadDeliveryId('standard_webhooks', { id: 'evt_1' })).toBeUndefined();
  });

  it("recognises Slack's URL verification only with a string challenge", () => {
    expect(slackChallenge({ type: 'url_verification', challenge: 'abc', token: 't' })).toBe('abc');
    expect(slackChallenge({ type: 'url_verification', challenge: 1 })).toBeNull();
    expect(slackChallenge({ type: 'event_callback', challenge: 'abc' })).toBeNull();
    expect(slackChallenge(['url_verification'])).toBeNull();
  });
});
