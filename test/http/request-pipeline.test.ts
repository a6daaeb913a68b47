import { randomInt, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import { lazyChildLogger } from '../../src/http/request-logger.js';
import { openProcessDeps } from '../../src/process-deps.js';
import { manualClock, testConfig } from '../helpers/app.js';
import { DATABASES, type TestDatabase } from '../helpers/databases.js';

const MINUTE = 60_000;

/** A sink that keeps every line a pino logger writes, parsed. */
function lineSink() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

/** The production app over a logger writing into `sink`; `extend` adds routes before it is ready. */
async function appWithLogs(
  database: TestDatabase,
  config: Partial<Config>,
  extend: (app: FastifyInstance) => void = () => {},
) {
  const sink = lineSink();
  const full = testConfig(database, config);
  // Counters of a minute about a day ahead, so the shared stores hold only this file's requests.
  const clock = manualClock((Math.floor(Date.now() / MINUTE) + 1_440 + randomInt(10_000)) * MINUTE);
  const runtime = await openProcessDeps(full, { logger: pino({ level: full.logLevel }, sink.stream), clock });
  const app = await buildApp(full, runtime, { closeRuntime: true });
  extend(app);
  await app.ready();
  return { app, lines: sink.lines };
}

describe.each(DATABASES)('request logging on $name', (database) => {
  let app: FastifyInstance;
  let lines: Array<Record<string, unknown>>;

  beforeAll(async () => {
    ({ app, lines } = await appWithLogs(database, { logLevel: 'debug' }, (a) => {
      a.get('/test/logs', async (request) => {
        request.log.info({ step: 'handler' }, 'inside the handler');
        request.log.debug({ step: 'handler' }, 'inside the handler, in detail');
        request.log.trace('below the level');
        return { ok: true };
      });
    }));
  });
  afterAll(() => app.close());

  it("carries the request id in every line a request logs, the framework's and the handler's", async () => {
    const id = `pipeline-${randomUUID()}`;
    const res = await app.inject({ method: 'GET', url: '/test/logs', headers: { 'x-request-id': id } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe(id);
    const mine = lines.filter((line) => line.reqId === id);
    expect(mine.map((line) => line.msg)).toEqual([
      'incoming request',
      'inside the handler',
      'inside the handler, in detail',
      'request completed',
    ]);
    expect(mine[1]).toMatchObject({ level: 30, step: 'handler' });
    expect(mine[2]).toMatchObject({ level: 20, step: 'handler' });
  });

  it('logs 404s and refusals with their request id too', async () => {
    const id = `pipeline-${randomUUID()}`;
    for (const url of ['/nothing-here', '/agent/list']) {
      const res = await app.inject({ method: 'GET', url, headers: { 'x-request-id': id } });
      expect(res.statusCode).toBe(url === '/nothing-here' ? 404 : 401);
    }
    const mine = lines.filter((line) => line.reqId === id).map((line) => line.msg);
    expect(mine.filter((msg) => msg === 'incoming request')).toHaveLength(2);
    expect(mine.filter((msg) => msg === 'request completed')).toHaveLength(2);
  });
});

describe('the lazy request logger', () => {
  it('writes what a pino child writes, bindings and redaction included, and nothing below the level', () => {
    const lazy = lineSink();
    const eager = lineSink();
    const options = { level: 'info', redact: { paths: ['secret'], censor: '[redacted]' } };
    const lazyLog = lazyChildLogger(pino(options, lazy.stream), { reqId: 'r-1' }, {});
    const eagerLog = pino(options, eager.stream).child({ reqId: 'r-1' }, {});
    for (const log of [lazyLog, eagerLog]) {
      log.debug('hidden');
      log.info({ secret: 's3cr3t', n: 1 }, 'shown');
      log.warn('also shown');
      log.child({ sub: true }).error('from a child');
    }
    const strip = (lines: Array<Record<string, unknown>>) => lines.map(({ time: _time, ...rest }) => rest);
    expect(strip(lazy.lines)).toEqual(strip(eager.lines));
    expect(lazy.lines.map((line) => line.msg)).toEqual(['shown', 'also shown', 'from a child']);
    expect(lazy.lines[0]).toMatchObject({ reqId: 'r-1', secret: '[redacted]', n: 1 });
    expect(lazy.lines[2]).toMatchObject({ reqId: 'r-1', sub: true });
  });

  it("follows a route's own level and a change of the parent's level", () => {
    const sink = lineSink();
    const parent = pino({ level: 'warn' }, sink.stream);
    const chatty = lazyChildLogger(parent, { reqId: 'r-2' }, { level: 'debug' });
    expect(chatty.level).toBe('debug');
    chatty.debug('route level');
    const quiet = lazyChildLogger(parent, { reqId: 'r-3' }, {});
    expect(quiet.level).toBe('warn');
    quiet.info('dropped');
    parent.level = 'info';
    quiet.info('now kept');
    expect(sink.lines.map((line) => [line.reqId, line.msg])).toEqual([
      ['r-2', 'route level'],
      ['r-3', 'now kept'],
    ]);
  });
});

describe.each(DATABASES)('a route counted after its body, on $name', (database) => {
  const LIMIT = 5;
  let app: FastifyInstance;
  const seen: string[] = [];

  const remaining = (reply: FastifyReply) => String(reply.getHeader('x-ratelimit-remaining'));

  beforeAll(async () => {
    ({ app } = await appWithLogs(database, { logLevel: 'silent', rateLimit: LIMIT }, (a) => {
      a.post(
        '/test/after-body',
        {
          config: {
            rateLimitAfterBody: true,
            rateLimitScope: async (request: FastifyRequest) => `test:${(request.body as { who: string }).who}`,
          },
          // The route's own hooks run after the guard's count, as they did when it was app-wide.
          preHandler: async (_request, reply) => {
            seen.push(`own preHandler after the count: ${remaining(reply)}`);
          },
          onSend: async (_request, reply, payload) => {
            seen.push(`own onSend: ${remaining(reply)}`);
            return payload;
          },
        },
        async () => ({ ok: true }),
      );
      a.post('/test/plain', async () => ({ ok: true }));
    }));
  });
  afterAll(() => app.close());

  const post = (url: string, payload: string, address: string) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload,
      remoteAddress: address,
    });

  it('counts once against the scope its body names, before its own hooks run', async () => {
    const who = randomUUID();
    const address = `198.51.100.${randomInt(1, 255)}`;
    const first = await post('/test/after-body', JSON.stringify({ who }), address);
    const second = await post('/test/after-body', JSON.stringify({ who }), address);
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect([first.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining']]).toEqual(['4', '3']);
    expect(seen.splice(0)).toEqual([
      'own preHandler after the count: 4',
      'own onSend: 4',
      'own preHandler after the count: 3',
      'own onSend: 3',
    ]);
    // The client address was not counted for these: its window is whole.
    const plain = await post('/test/plain', '{}', address);
    expect(plain.headers['x-ratelimit-remaining']).toBe('4');
  });

  it('counts a body refused before it is read against the client address, once', async () => {
    const address = `203.0.113.${randomInt(1, 255)}`;
    const refused = await post('/test/after-body', '{"who": ', address);
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['x-ratelimit-remaining']).toBe('4');
    expect(seen.splice(0)).toEqual(['own onSend: 4']);
    const plain = await post('/test/plain', '{}', address);
    expect(plain.headers['x-ratelimit-remaining']).toBe('3');
  });

  it('runs no count-after-body hook for other routes: each request is counted once', async () => {
    const address = `192.0.2.${randomInt(1, 255)}`;
    const answers = [];
    for (let i = 0; i < LIMIT + 1; i++) answers.push(await post('/test/plain', '{}', address));
    expect(answers.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0', '0']);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 429]);
  });
});
