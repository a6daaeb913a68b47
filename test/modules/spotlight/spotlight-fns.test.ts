import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { apiKeyHint, normaliseBaseUrl } from '../../../src/modules/providers/providers-fns.js';
import {
  checkChatBody,
  chunkFacts,
  createSseSplitter,
  type ProxyError,
  SseEventTooLarge,
  splitModel,
  sseData,
  upstreamChatBody,
  upstreamErrorBody,
} from '../../../src/modules/spotlight/proxy/proxy-fns.js';
import {
  genAiSpanAttributes,
  genAiSpanOf,
  type RecordedCall,
} from '../../../src/modules/spotlight/usage/call-spans.js';

describe('provider credential rules', () => {
  it.each([
    ['sk-proj-abc…wxyz'.replace('…', 'defghijklmnop'), 'sk-…wxyz'],
    ['0123456789abcdef', '012…cdef'],
    ['0123456789abcde', '…'],
    ['', '…'],
  ])('hint of %j is %j', (key, hint) => expect(apiKeyHint(key)).toBe(hint));

  it('normalises base URLs and names what is wrong', () => {
    expect(normaliseBaseUrl('https://a.example/v1///')).toEqual({ ok: true, url: 'https://a.example/v1' });
    expect(normaliseBaseUrl('http://a.example:8000')).toEqual({ ok: true, url: 'http://a.example:8000' });
    for (const bad of [
      'a.example/v1',
      'ws://a.example',
      'https://u@a.example',
      'https://a.example/v1?',
      'https://a.example/#x',
    ]) {
      expect(normaliseBaseUrl(bad).ok).toBe(false);
    }
  });
});

describe('proxy request shaping', () => {
  it.each([
    ['fake/gpt-4o', { credential: 'fake', upstream: 'gpt-4o' }],
    ['or/meta-llama/llama-3', { credential: 'or', upstream: 'meta-llama/llama-3' }],
    ['gpt-4o', null],
    ['/gpt-4o', null],
    ['fake/', null],
  ])('splits %j', (model, expected) => expect(splitModel(model)).toEqual(expected));

  it('checks only model and messages, naming the field', () => {
    expect(checkChatBody({ model: 'm', messages: [{}], anything: { else: 1 } })).toMatchObject({
      anything: { else: 1 },
    });
    const param = (body: unknown) => {
      try {
        checkChatBody(body);
        return 'accepted';
      } catch (err) {
        return (err as ProxyError).body.error.param;
      }
    };
    expect([
      param(null),
      param([]),
      param({ messages: [1] }),
      param({ model: 1, messages: [1] }),
      param({ model: 'm', messages: {} }),
    ]).toEqual([null, null, 'model', 'model', 'messages']);
  });

  it('replaces the model and asks for usage on streams, keeping other stream options', () => {
    const body = { model: 'a/b', messages: [1], stream: true, stream_options: { foo: 1 }, n: 2 };
    expect(upstreamChatBody(body, 'b')).toEqual({
      body: { model: 'b', messages: [1], stream: true, stream_options: { foo: 1, include_usage: true }, n: 2 },
      stream: true,
      callerWantsUsage: false,
    });
    expect(upstreamChatBody({ ...body, stream_options: { include_usage: true } }, 'b').callerWantsUsage).toBe(true);
    expect(upstreamChatBody({ model: 'a/b', messages: [1] }, 'b').body).toEqual({ model: 'b', messages: [1] });
  });
});

describe('reading streams', () => {
  it('splits SSE events the same wherever the chunks break', () => {
    const events = ['data: {"a":1}', 'data: {"b":"x\\ny"}', 'event: ping\ndata: 2', 'data: [DONE]'];
    const text = events.map((e) => `${e}\n\n`).join('');
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 10 }), (cuts) => {
        const splitter = createSseSplitter();
        const points = [0, ...cuts.sort((x, y) => x - y), text.length];
        const out: string[] = [];
        for (let i = 1; i < points.length; i++) out.push(...splitter.push(text.slice(points[i - 1], points[i])));
        expect(out).toEqual(events);
        expect(splitter.rest()).toBe('');
      }),
    );
    expect(createSseSplitter().push('data: 1\r\n\r\ndata: 2\n\n')).toEqual(['data: 1', 'data: 2']);
    expect(sseData('event: x\ndata: a\ndata: b')).toBe('a\nb');
    expect(sseData(': comment')).toBeNull();
  });

  it('finds the same events as a search of the whole text, whatever the line endings and chunks', () => {
    const reference = (text: string) => {
      const out: string[] = [];
      let rest = text;
      for (let m = /\r?\n\r?\n/.exec(rest); m; m = /\r?\n\r?\n/.exec(rest)) {
        out.push(rest.slice(0, m.index));
        rest = rest.slice(m.index + m[0].length);
      }
      return { events: out, rest };
    };
    const text = fc.array(fc.constantFrom('a', 'b', '\r', '\n'), { maxLength: 60 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(text, fc.array(fc.integer({ min: 1, max: 7 }), { maxLength: 30 }), (whole, sizes) => {
        const splitter = createSseSplitter();
        const events: string[] = [];
        let at = 0;
        for (const size of sizes) {
          events.push(...splitter.push(whole.slice(at, at + size)));
          at += size;
        }
        events.push(...splitter.push(whole.slice(at)));
        expect({ events, rest: splitter.rest() }).toEqual(reference(whole));
      }),
    );
  });

  it('searches each character a bounded number of times, however small the chunks', () => {
    const splitter = createSseSplitter();
    const event = `data: ${'x'.repeat(200_000)}`;
    let early = 0;
    for (const ch of event) early += splitter.push(ch).length;
    expect(early).toBe(0);
    expect(splitter.push('\n\n')).toEqual([event]);
    // A search of the whole open event per chunk would scan about 2 * 10^10 characters.
    expect(splitter.scanned).toBeLessThanOrEqual(4 * (event.length + 2));
  });

  it('refuses an event that grows past its cap without a blank line', () => {
    const splitter = createSseSplitter(1000);
    expect(splitter.push(`data: ${'x'.repeat(990)}\n\ndata: `)).toHaveLength(1);
    expect(() => {
      for (let i = 0; i < 100; i++) splitter.push('y'.repeat(20));
    }).toThrow(SseEventTooLarge);
  });

  it('reads model, first token, usage and finish reasons of chunks', () => {
    expect(chunkFacts({ model: 'm', id: 'i', choices: [{ delta: { role: 'assistant', content: '' } }] })).toMatchObject(
      {
        model: 'm',
        id: 'i',
        hasToken: false,
        usageOnly: false,
      },
    );
    expect(chunkFacts({ choices: [{ delta: { tool_calls: [{}] } }] }).hasToken).toBe(true);
    expect(chunkFacts({ choices: [{ delta: { refusal: 'no' }, finish_reason: 'stop' }] })).toMatchObject({
      hasToken: true,
      finishReasons: ['stop'],
    });
    expect(chunkFacts({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } })).toMatchObject({
      usageOnly: true,
      usage: { input: 3, output: 4 },
    });
    expect(chunkFacts({ usage: { prompt_tokens: -1, completion_tokens: 'x' } }).usage).toEqual({
      input: null,
      output: null,
      cacheRead: null,
      cacheWrite: null,
      cacheWrite1h: 0,
    });
    const cached = { prompt_tokens: 1200, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 1024 } };
    expect(chunkFacts({ usage: cached }).usage).toMatchObject({ input: 1200, cacheRead: 1024, cacheWrite: null });
  });

  it('relays JSON error bodies unchanged and wraps anything else', () => {
    const json = '{"error":{"message":"bad","type":"x","param":null,"code":"y"}}';
    expect(upstreamErrorBody(400, json)).toEqual({ body: json, message: 'bad', json: true });
    const wrapped = upstreamErrorBody(502, `<html>${'x'.repeat(600)}`);
    expect(JSON.parse(wrapped.body).error).toEqual({
      message: `upstream answered HTTP 502: <html>${'x'.repeat(494)}`,
      type: 'upstream_error',
      param: null,
      code: 'upstream_error',
    });
    expect(upstreamErrorBody(500, '{"error":"string"}').json).toBe(false);
  });
});

describe('GenAI span of a call', () => {
  const call: RecordedCall = {
    uuid: '0190b4c2-0000-7000-8000-000000000001',
    workspaceUuid: 'u',
    createdAt: '2026-11-22T10:00:00.000Z',
    source: 'api',
    api: 'chat.completions',
    model: 'fake/gpt-4o',
    upstreamModel: 'gpt-4o',
    responseModel: 'gpt-4o-2024-08-06',
    providerCredentialUuid: 'c',
    stream: true,
    statusCode: 200,
    error: null,
    latencyMs: 120,
    timeToFirstTokenMs: 40,
    inputTokens: 11,
    outputTokens: 7,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    costNanos: 97_500,
    agentUuid: 'a',
    taskUuid: 't',
    platformKeyUuid: null,
    route: null,
    attempts: [],
    cacheHit: false,
    usageEstimated: false,
    responseId: 'chatcmpl-1',
    finishReasons: ['stop'],
    traceparent: null,
    request: { temperature: 0.2, maxTokens: undefined, baseUrl: 'https://api.example.com/v1' },
  };

  it('carries the GenAI attributes of the call and nothing of its text', () => {
    expect(genAiSpanAttributes(call)).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'taskhook.spotlight.api': 'chat.completions',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o-2024-08-06',
      'gen_ai.response.id': 'chatcmpl-1',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.request.temperature': 0.2,
      'server.address': 'api.example.com',
      'server.port': 443,
      'taskhook.spotlight.call_id': call.uuid,
      'taskhook.spotlight.cache_hit': false,
      'taskhook.spotlight.usage_estimated': false,
      'taskhook.task_id': 't',
      'taskhook.agent_uuid': 'a',
    });
    const failed = genAiSpanOf({ ...call, error: { code: 'upstream_timeout', message: 'late' } });
    expect(failed).toMatchObject({ name: 'chat gpt-4o', kind: 'client', status: 'error', durationMs: 120 });
    expect(failed.attributes['error.type']).toBe('upstream_timeout');
  });

  it("says when the usage is the proxy's estimate", () => {
    const estimated = genAiSpanAttributes({ ...call, inputTokens: 101, outputTokens: 3, usageEstimated: true });
    expect(estimated).toMatchObject({
      'gen_ai.usage.input_tokens': 101,
      'gen_ai.usage.output_tokens': 3,
      'taskhook.spotlight.usage_estimated': true,
    });
  });

  it("names the endpoint kind and provider, and the provider's cache tokens when recorded", () => {
    const attributes = genAiSpanAttributes({
      ...call,
      api: 'anthropic.messages',
      inputTokens: 1120,
      cacheReadTokens: 1000,
      cacheWriteTokens: 100,
    });
    expect(attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'taskhook.spotlight.api': 'anthropic.messages',
      'gen_ai.usage.input_tokens': 1120,
      'gen_ai.usage.cache_read.input_tokens': 1000,
      'gen_ai.usage.cache_creation.input_tokens': 100,
    });
    expect(genAiSpanAttributes({ ...call, api: 'responses' })['gen_ai.provider.name']).toBe('openai');
    expect(Object.keys(genAiSpanAttributes(call)).some((k) => k.includes('cache_read'))).toBe(false);
  });
});
