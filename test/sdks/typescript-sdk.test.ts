import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  NotFoundError,
  RateLimitError,
  ServerError,
  TaskhookClient,
  TaskhookConnectionError,
  TaskhookError,
  VERSION,
  verifyWebhook,
  WebhookVerificationError,
} from '@taskhook/sdk';
import { afterEach, describe, expect, it } from 'vitest';

type Answer = { status: number; body: string; headers?: Record<string, string> };

/** A local server answering from a script and recording what it got (transport rules, no storage). */
async function scripted(answers: Answer[]) {
  const seen: Array<{ method?: string; url?: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    const answer = answers.shift() ?? { status: 200, body: '{}' };
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}
const servers: Array<ReturnType<typeof createServer>> = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const busy = {
  status: 503,
  body: JSON.stringify({ error: { code: 'BUSY', message: 'busy' } }),
  headers: { 'retry-after': '0' },
};

describe('@taskhook/sdk transport', () => {
  it('reads TASKHOOK_URL and TASKHOOK_API_KEY; no key is a TypeError naming the variable', async () => {
    const { url, seen } = await scripted([{ status: 200, body: '{}' }]);
    const saved = { ...process.env };
    try {
      delete process.env.TASKHOOK_API_KEY;
      expect(() => new TaskhookClient()).toThrow(/TASKHOOK_API_KEY/);
      process.env.TASKHOOK_URL = `${url}/prefix/`;
      process.env.TASKHOOK_API_KEY = 'sk_env';
      await new TaskhookClient({ headers: { 'x-extra': '1' } }).get('a', 't');
    } finally {
      process.env = saved;
    }
    expect(seen[0]).toMatchObject({ url: '/prefix/agent/a/task/t' });
    expect(seen[0]?.headers).toMatchObject({ authorization: 'Bearer sk_env', 'x-extra': '1' });
    expect(seen[0]?.headers['user-agent']).toMatch(new RegExp(`^taskhook-js/${VERSION.replace(/\./g, '\\.')}`));
  });

  it('retries a submit with the same Idempotency-Key, and sends a message once', async () => {
    const { url, seen } = await scripted([busy, { status: 200, body: '{"task_id":"t"}' }, busy]);
    const client = new TaskhookClient({ baseUrl: url, apiKey: 'k' });
    await client.submit(
      'a',
      { message: 'hi' },
      { traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' },
    );
    expect(seen).toHaveLength(2);
    expect(seen[0]?.headers['idempotency-key']).toBeTruthy();
    expect(seen[1]?.headers['idempotency-key']).toBe(seen[0]?.headers['idempotency-key']);
    expect(seen[0]?.headers.traceparent).toMatch(/^00-/);
    await expect(client.message('a', 't', 'hi')).rejects.toBeInstanceOf(ServerError);
    expect(seen).toHaveLength(3);
  });

  it('maps statuses to classes with their fields', async () => {
    const { url } = await scripted([
      {
        status: 404,
        body: JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no', details: { x: 1 } } }),
        headers: { 'x-request-id': 'r1' },
      },
      { status: 429, body: JSON.stringify({ error: 'slow' }), headers: { 'retry-after': '0' } },
      { status: 415, body: JSON.stringify({ error: 'media' }) },
    ]);
    const client = new TaskhookClient({ baseUrl: url, apiKey: 'k', maxRetries: 0 });
    const notFound = await client.get('a', 't').catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toMatchObject({
      name: 'NotFoundError',
      status: 404,
      code: 'NOT_FOUND',
      details: { x: 1 },
      requestId: 'r1',
    });
    const limited = await client.get('a', 't').catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited).toMatchObject({ retryAfter: 0, message: 'slow', code: undefined });
    const other = await client.get('a', 't').catch((e: unknown) => e);
    expect((other as Error).constructor).toBe(TaskhookError);
    const refused = await new TaskhookClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', maxRetries: 0 })
      .get('a', 't')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TaskhookConnectionError);
    expect(refused).toMatchObject({ status: undefined });
  });
});

describe('verifyWebhook', () => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const secret = `whsec_${key.toString('base64')}`;
  const body = JSON.stringify({ type: 'task.completed', timestamp: '2026-01-01T00:00:00Z', data: { task_id: 'x' } });
  const sign = (payload: string, at = Math.floor(Date.now() / 1000), k = key) => ({
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(at),
    'webhook-signature': `v1,${createHmac('sha256', k).update(`msg_1.${at}.${payload}`).digest('base64')}`,
  });

  it('returns the body of a signed callback, from a string, bytes or Headers', () => {
    expect(verifyWebhook(body, sign(body), secret).type).toBe('task.completed');
    expect(
      verifyWebhook(Buffer.from(body), new Headers(sign(body)), [
        `whsec_${Buffer.from('x'.repeat(32)).toString('base64')}`,
        secret,
      ]).data,
    ).toEqual({ task_id: 'x' });
    expect(verifyWebhook(body, sign(body), key.toString('base64')).type).toBe('task.completed');
  });

  it('refuses a changed body, another secret, an old timestamp and a missing header', () => {
    const other = `whsec_${Buffer.from('y'.repeat(32)).toString('base64')}`;
    const { 'webhook-id': _, ...noId } = sign(body);
    for (const [payload, headers, s] of [
      [`${body} `, sign(body), secret],
      [body, sign(body), other],
      [body, sign(body, Math.floor(Date.now() / 1000) - 301), secret],
      [body, noId, secret],
      ['nope', sign('nope'), secret],
    ] as const) {
      expect(() => verifyWebhook(payload, headers, s)).toThrow(WebhookVerificationError);
    }
  });
});
