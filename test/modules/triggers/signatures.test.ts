import { createHmac } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateDelivery, verifyHubSignature } from '../../../src/modules/triggers/triggers-fns.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { expectFlatError, expectStandardHeaders } from '../../helpers/routes.js';
import { getTask, listTasks } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';

/** GitHub's published example (docs: "Validating webhook deliveries"). */
const GITHUB_VECTOR = {
  secret: "It's a Secret to Everybody",
  body: 'Hello, World!',
  signature: 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
};

const INVALID = 'Invalid webhook secret or signature';

/** The body with one byte changed (the last bit of the byte at `at` flipped). */
function flipByte(body: string, at = 0): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  bytes[at] = (bytes[at] ?? 0) ^ 1;
  return bytes;
}

/** Signatures for `body` that must all be refused when checked against `secret`. */
function badSignatures(body: string, secret: string, good: string): Array<[string, string]> {
  const hex = good.slice('sha256='.length);
  return [
    ['a signature made with another secret', createHmacHeader(`${secret}x`, body)],
    ['a truncated signature', good.slice(0, -1)],
    ['a signature cut to half', `sha256=${hex.slice(0, 32)}`],
    ['a signature with one character more', `${good}0`],
    ['a non-hex signature', `sha256=${'g'.repeat(64)}`],
    ['a signature whose last digit is not hex', `${good.slice(0, -1)}z`],
    ['a sha1= signature', `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`],
    ['a sha1= prefix on the right digest', `sha1=${hex}`],
    ['a bare digest without sha256=', hex],
    ['sha256= alone', 'sha256='],
    ['an empty header', ''],
    ['the digest base64-encoded', `sha256=${Buffer.from(hex, 'hex').toString('base64')}`],
  ];
}

function createHmacHeader(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

describe('X-Hub-Signature-256 (docs/api.md §7.3)', () => {
  it("verifies GitHub's published test vector", async () => {
    expect(await sign(GITHUB_VECTOR.secret, GITHUB_VECTOR.body)).toBe(GITHUB_VECTOR.signature);
    expect(verifyHubSignature(GITHUB_VECTOR.signature, Buffer.from(GITHUB_VECTOR.body), GITHUB_VECTOR.secret)).toBe(
      true,
    );
  });

  it('refuses the test vector with the body changed by one byte, at any position', () => {
    const { secret, body, signature } = GITHUB_VECTOR;
    for (let at = 0; at < Buffer.byteLength(body); at++) {
      expect(verifyHubSignature(signature, flipByte(body, at), secret)).toBe(false);
    }
    expect(verifyHubSignature(signature, Buffer.from(`${body}\n`), secret)).toBe(false);
    expect(verifyHubSignature(signature, Buffer.from(body.slice(0, -1)), secret)).toBe(false);
  });

  it.each(badSignatures(GITHUB_VECTOR.body, GITHUB_VECTOR.secret, GITHUB_VECTOR.signature))('refuses %s', (_, bad) => {
    expect(verifyHubSignature(bad, Buffer.from(GITHUB_VECTOR.body), GITHUB_VECTOR.secret)).toBe(false);
  });

  it('accepts what @octokit/webhooks-methods sign() produces, for any secret and body', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1 }),
        fc.string({ unit: 'grapheme', minLength: 1 }),
        async (secret, body) => {
          const signature = await sign(secret, body);
          expect(verifyHubSignature(signature, Buffer.from(body, 'utf8'), secret)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses a signature of any other body or with any other secret', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        fc.string(),
        fc.string({ minLength: 1 }),
        async (secret, body, otherBody, otherSecret) => {
          const signature = await sign(secret, body);
          if (Buffer.from(otherBody).equals(Buffer.from(body))) return;
          expect(verifyHubSignature(signature, Buffer.from(otherBody), secret)).toBe(false);
          if (otherSecret !== secret) expect(verifyHubSignature(signature, Buffer.from(body), otherSecret)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('authenticateDelivery', () => {
  const body = Buffer.from('{"a":1}');
  const current = 'whs_current';
  const previous = 'whs_previous';

  it('accepts the secret or a signature made with any active secret', () => {
    for (const secret of [current, previous]) {
      expect(authenticateDelivery({ secret }, body, [current, previous])).toBe(true);
      expect(authenticateDelivery({ signature: createHmacHeader(secret, body) }, body, [current, previous])).toBe(true);
      const both = { secret, signature: createHmacHeader(secret, body) };
      expect(authenticateDelivery(both, body, [current, previous])).toBe(true);
    }
  });

  it('refuses a secret that is not active, and a correct credential next to a wrong one', () => {
    expect(authenticateDelivery({ secret: previous }, body, [current])).toBe(false);
    expect(authenticateDelivery({ secret: `${current} ` }, body, [current])).toBe(false);
    expect(authenticateDelivery({ secret: '' }, body, [current])).toBe(false);
    expect(authenticateDelivery({ secret: current, signature: 'sha256=00' }, body, [current])).toBe(false);
    const mixed = { secret: current, signature: createHmacHeader(previous, body) };
    expect(authenticateDelivery(mixed, body, [current, previous])).toBe(false);
  });

  it('refuses a delivery that presents no credential at all', () => {
    expect(authenticateDelivery({}, body, [current, previous])).toBe(false);
    expect(authenticateDelivery({ secret: undefined, signature: undefined }, body, [current])).toBe(false);
  });
});

describe.each(DATABASES)('signed deliveries over HTTP on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  async function setup() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const trigger = await createTrigger(t, user, agent, { message_template: 'Push to {{payload.ref}}' });
    return { user, agent, trigger };
  }

  it('accepts a delivery signed by @octokit/webhooks-methods and creates a task', async () => {
    const { user, agent, trigger } = await setup();
    const body = JSON.stringify({ ref: 'refs/heads/main', commits: [{ id: 'abc', message: 'Grüße 🎉' }] });
    const res = await deliver(t, trigger.uuid, {
      body,
      signature: await sign(trigger.webhook_secret, body),
      headers: { 'x-github-event': 'push' },
    });
    expect(res.statusCode, res.body).toBe(202);
    expectStandardHeaders(res);
    const task = await getTask(t, user, agent, res.json().task_id);
    expect(task).toMatchObject({ status: 'queued', agent_uuid: agent, message: 'Push to refs/heads/main' });
    expect((await listTasks(t, user, agent)).pagination.total).toBe(1);
  });

  it('checks the signature over the exact bytes sent: whitespace and key order count', async () => {
    const { user, agent, trigger } = await setup();
    const sent = '{ "ref" : "refs/heads/dev",\n  "x": 1 }';
    const signature = await sign(trigger.webhook_secret, sent);
    const reformatted = await deliver(t, trigger.uuid, { body: JSON.stringify(JSON.parse(sent)), signature });
    expectFlatError(reformatted, 401, INVALID);
    const exact = await deliver(t, trigger.uuid, { body: sent, signature });
    expect(exact.statusCode, exact.body).toBe(202);
    expect((await getTask(t, user, agent, exact.json().task_id)).message).toBe('Push to refs/heads/dev');
  });

  it(`answers 401 "${INVALID}" to each bad signature and creates nothing`, async () => {
    const { user, agent, trigger } = await setup();
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const good = await sign(trigger.webhook_secret, body);
    const refused: Array<[string, { body: string | Buffer; signature: string }]> = [
      ['the body changed by one byte', { body: flipByte(body, 10), signature: good }],
      ...badSignatures(body, trigger.webhook_secret, good).map(
        ([name, signature]): [string, { body: string; signature: string }] => [name, { body, signature }],
      ),
      ['a signature made with another trigger secret', { body, signature: await sign('whs_not-this-one', body) }],
    ];
    for (const [name, delivery] of refused) {
      const res = await deliver(t, trigger.uuid, delivery);
      expect({ name, status: res.statusCode }).toEqual({ name, status: 401 });
      expectFlatError(res, 401, INVALID);
    }
    expect((await listTasks(t, user, agent)).pagination.total).toBe(0);
    // Positive control: the same trigger accepts the right signature.
    expect((await deliver(t, trigger.uuid, { body, signature: good })).statusCode).toBe(202);
  });

  it('refuses a valid signature sent together with a wrong X-Webhook-Secret', async () => {
    const { user, agent, trigger } = await setup();
    const body = JSON.stringify({ ref: 'x' });
    const signature = await sign(trigger.webhook_secret, body);
    expectFlatError(await deliver(t, trigger.uuid, { body, signature, secret: 'whs_wrong' }), 401, INVALID);
    const both = await deliver(t, trigger.uuid, { body, signature, secret: trigger.webhook_secret });
    expect(both.statusCode, both.body).toBe(202);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(1);
  });

  it("does not accept another trigger's signature", async () => {
    const { user, agent, trigger } = await setup();
    const other = await createTrigger(t, user, agent);
    const body = JSON.stringify({ ref: 'x' });
    const res = await deliver(t, trigger.uuid, { body, signature: await sign(other.webhook_secret, body) });
    expectFlatError(res, 401, INVALID);
    expectFlatError(await deliver(t, trigger.uuid, { body, secret: other.webhook_secret }), 401, INVALID);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(0);
  });
});
