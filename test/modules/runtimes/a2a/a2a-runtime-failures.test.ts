import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createA2aRuntime } from '../../../../src/modules/runtimes/a2a/a2a-runtime.js';
import { a2aServers, configOf, loopback, runnerFor, taskOf } from '../../../helpers/a2a-runs.js';

const { agentWith, answering, closedPort } = a2aServers();

describe('the a2a runtime fails the attempt with DELIVERY_FAILED (retryable)', () => {
  it('when the card is unreachable, answers non-2xx, or redirects', async () => {
    const closed = await closedPort();
    const notFound = await answering(404, {}, 'no');
    const moved = await answering(302, { location: notFound }, '');
    const busy = await answering(503, { 'retry-after': '7' }, 'busy');
    const runtime = loopback();
    for (const [url, words, retryAfterMs] of [
      [closed, 'fetch failed', null],
      [notFound, 'HTTP 404', null],
      [moved, 'HTTP 302', null],
      [busy, 'HTTP 503', 7000],
    ] as const) {
      const outcome = await runnerFor(runtime, configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true, retryAfterMs });
      expect((outcome as { message: string }).message).toContain(words);
    }
  });

  it('when the card is not JSON or lists no usable interface', async () => {
    const agent = await agentWith({
      binding: 'JSONRPC',
      streaming: false,
      interfaces: [
        { url: 'http://127.0.0.1:1/rpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: 'http://127.0.0.1:1/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
    });
    const garbage = await answering(200, { 'content-type': 'application/json' }, '<html>');
    for (const [url, words] of [
      [agent.cardUrl, 'no JSONRPC or HTTP+JSON interface of protocol version 1.0'],
      [garbage, 'not valid JSON'],
    ] as const) {
      const outcome = await runnerFor(loopback(), configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toContain(words);
    }
    expect(agent.received).toEqual([]);
  });

  it('refuses a private address unless private URLs are allowed: nothing reaches the agent', async () => {
    const agent = await agentWith({ binding: 'JSONRPC', streaming: false });
    const guarded = createA2aRuntime({ outbound: { allowPrivate: false } });
    for (const url of [agent.cardUrl, agent.cardUrl.replace('127.0.0.1', 'localhost')]) {
      const outcome = await runnerFor(guarded, configOf(url)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toMatch(/private/);
    }
    // A host name is refused when it resolves to a private address.
    const port = new URL(agent.cardUrl).port;
    const named = createA2aRuntime({
      outbound: { allowPrivate: false, lookup: async () => [{ address: '127.0.0.1', family: 4 }] },
    });
    const outcome = await runnerFor(named, configOf(`http://agent.example.com:${port}/card`)).run(
      taskOf([['user', 'text']]),
    );
    expect(outcome).toMatchObject({
      kind: 'failed',
      code: 'DELIVERY_FAILED',
      message: expect.stringMatching(/private/),
    });
    expect(agent.requests).toEqual([]);
  });

  it("checks the card's interface URL with the same guard before calling it", async () => {
    const target = await agentWith({ binding: 'JSONRPC', streaming: false });
    const agent = await agentWith({
      binding: 'JSONRPC',
      streaming: false,
      // The guard refuses schemes other than http(s) even where private addresses are allowed.
      interfaces: [
        { url: target.baseUrl.replace('http:', 'ftp:'), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
    });
    const outcome = await runnerFor(loopback(), configOf(agent.cardUrl)).run(taskOf([['user', 'text']]));
    expect(outcome).toMatchObject({
      kind: 'failed',
      code: 'DELIVERY_FAILED',
      message: expect.stringContaining('must use http or https'),
    });
    expect(target.requests).toEqual([]);
  });

  it.each([false, true])(
    'a JSON-RPC error answer (reply to a remote task the agent does not know, streaming %s) is DELIVERY_FAILED',
    async (streaming) => {
      const agent = await agentWith({ binding: 'JSONRPC', streaming });
      const runner = runnerFor(loopback(), configOf(agent.cardUrl));
      const state = {
        taskId: 'no-such-task',
        contextId: 'no-such-context',
        url: `${agent.baseUrl}/jsonrpc`,
        binding: 'JSONRPC',
        tenant: '',
        streaming,
        attempt: 1,
        phase: 'awaiting_input',
      };
      const task = taskOf([
        ['user', 'ask'],
        ['agent', 'Which branch?'],
        ['user', 'main'],
      ]);
      const outcome = await runner.run(task, { state });
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toMatch(/not found/i);
      expect(agent.received).toEqual([]);
    },
  );

  describe('an answer larger than the limit', () => {
    const servers: Array<ReturnType<typeof createServer>> = [];
    afterAll(async () => {
      await Promise.all(servers.map((server) => new Promise((r) => server.close(r))));
    });

    it('is cut off and fails the attempt instead of being buffered whole', async () => {
      // A real card, pointing at an endpoint that answers every call with 256 KiB of JSON.
      const real = await agentWith({ binding: 'JSONRPC', streaming: false });
      const card = (await (await fetch(real.cardUrl)).json()) as Record<string, unknown>;
      let posts = 0;
      const server = createServer((req, res) => {
        if (req.method === 'GET')
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
        posts++;
        const pad = 'x'.repeat(256 * 1024);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', metadata: { pad } } } }));
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      card.supportedInterfaces = [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];

      const runtime = loopback({ maxAnswerBytes: 64 * 1024 });
      const outcome = await runnerFor(runtime, configOf(`${base}/card`)).run(taskOf([['user', 'text']]));
      expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true });
      expect((outcome as { message: string }).message).toMatch(/larger than 65536 bytes/);
      expect(posts).toBeGreaterThan(0);
      // Under the limit the same answer is read (and judged on its content, not its size).
      const roomy = await runnerFor(loopback({ maxAnswerBytes: 1024 * 1024 }), configOf(`${base}/card`)).run(
        taskOf([['user', 'text']]),
      );
      expect((roomy as { message?: string }).message ?? '').not.toMatch(/larger than/);
    });
  });
});
