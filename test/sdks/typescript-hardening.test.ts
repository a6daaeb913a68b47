import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskhookClient, TaskhookError, verifyWebhook, WebhookVerificationError } from '@taskhook/sdk';
import { afterEach, describe, expect, it } from 'vitest';

type Answer = { status: number; body: string; headers?: Record<string, string> };

/** A local server answering from a script and recording what it got (transport rules, no storage). */
async function scripted(answers: Answer[]) {
  const seen: Array<{ url?: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url, headers: req.headers });
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

describe('@taskhook/sdk never follows a redirect', () => {
  it('a 3xx on a call or on events() throws TaskhookError with that status; nothing reaches the Location', async () => {
    const target = await scripted([]);
    const moved = (status: number): Answer => ({
      status,
      body: 'moved',
      headers: { location: `${target.url}/stolen`, 'content-type': 'text/plain' },
    });
    for (const status of [301, 302, 307, 308]) {
      const { url, seen } = await scripted([moved(status), moved(status)]);
      const client = new TaskhookClient({ baseUrl: url, apiKey: 'sk_secret', maxRetries: 2 });
      await expect(client.get('a', 't')).rejects.toMatchObject({ name: 'TaskhookError', status });
      const events = client.events('a', 't');
      const err = await events.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TaskhookError);
      expect((err as TaskhookError).status).toBe(status);
      expect(seen).toHaveLength(2);
    }
    expect(target.seen).toEqual([]);
  });

  it('a redirect while resuming an event stream is thrown, not reconnected', async () => {
    const event = 'id: 1\nevent: task\ndata: {"task_id":"t","status":"running"}\n\n';
    const moved = { status: 307, body: '', headers: { location: 'http://127.0.0.1:9/x' } };
    const { url, seen } = await scripted([
      { status: 200, body: event, headers: { 'content-type': 'text/event-stream' } },
      moved,
      moved,
      moved,
    ]);
    const events = new TaskhookClient({ baseUrl: url, apiKey: 'sk_secret' }).events('a', 't');
    expect((await events.next()).value).toMatchObject({ id: 1 });
    await expect(events.next()).rejects.toMatchObject({ status: 307 });
    expect(seen).toHaveLength(2);
  });
});

describe('@taskhook/sdk retries wait for Retry-After on every retried status', () => {
  it('a 503 with Retry-After: 1 is retried after at least one second', async () => {
    const { url, seen } = await scripted([
      { status: 503, body: '{"error":"busy"}', headers: { 'retry-after': '1' } },
      { status: 200, body: '{"task_id":"t"}' },
    ]);
    const started = Date.now();
    await new TaskhookClient({ baseUrl: url, apiKey: 'k' }).get('a', 't');
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });
});

describe('verifyWebhook takes a timestamp of 1-19 ASCII digits only', () => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const secret = `whsec_${key.toString('base64')}`;
  const body = JSON.stringify({ type: 'task.completed', timestamp: '2026-01-01T00:00:00Z', data: {} });
  const headersFor = (stamp: string) => {
    const mac = createHmac('sha256', key).update(`msg_1.${stamp}.${body}`).digest('base64');
    return { 'webhook-id': 'msg_1', 'webhook-timestamp': stamp, 'webhook-signature': `v1,${mac}` };
  };

  it('refuses signs, spaces, underscores, other digits and 20 digits with WebhookVerificationError', () => {
    const now = String(Math.floor(Date.now() / 1000));
    const arabic = now.replace(/[0-9]/g, (d) => String.fromCharCode(0x660 + Number(d)));
    for (const stamp of [
      arabic,
      '١٢٣',
      `+${now}`,
      ` ${now}`,
      `${now} `,
      `${now.slice(0, 3)}_${now.slice(3)}`,
      '-1',
      `0${'1'.repeat(19)}`,
    ]) {
      expect(() => verifyWebhook(body, headersFor(stamp), secret), stamp).toThrow(WebhookVerificationError);
    }
    expect(verifyWebhook(body, headersFor(now), secret).type).toBe('task.completed');
    // Signed correctly, 20 digits: refused as a malformed timestamp, not as outside the tolerance.
    expect(() => verifyWebhook(body, headersFor(`0${now.padStart(19, '0')}`), secret)).toThrow(/not a Unix time/);
    expect(verifyWebhook(body, headersFor(now.padStart(19, '0')), secret).type).toBe('task.completed');
  });
});
