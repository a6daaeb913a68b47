import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { checkVersion, RpcError } from '../../../src/modules/a2a-server/a2a-errors.js';
import {
  pageToken,
  parseListParams,
  parseRequest,
  parseSendParams,
} from '../../../src/modules/a2a-server/a2a-rpc-fns.js';
import { rpcErrorOf } from '../../../src/modules/a2a-server/a2a-server-service.js';

const JSON_TYPE = 'application/json';

/** The error code a parse throws, or 'ok'. */
function codeOf(fn: () => unknown): number | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (err instanceof RpcError) return err.code;
    throw err;
  }
}

describe('JSON-RPC envelope', () => {
  it.each([
    ['{', JSON_TYPE, -32700],
    ['[]', JSON_TYPE, -32600],
    ['1', JSON_TYPE, -32600],
    ['{"jsonrpc":"2.0","method":"GetTask"}', JSON_TYPE, -32600],
    ['{"jsonrpc":"2.0","id":true,"method":"GetTask"}', JSON_TYPE, -32600],
    ['{"jsonrpc":"2.0","id":1,"method":""}', JSON_TYPE, -32600],
    ['{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}', JSON_TYPE, -32602],
    ['{"jsonrpc":"2.0","id":1,"method":"GetTask"}', undefined, -32600],
    ['{"jsonrpc":"2.0","id":1,"method":"GetTask"}', 'text/plain', -32600],
  ])('refuses %s (%s) with %i', (body, type, code) => {
    const parsed = parseRequest(type, body);
    expect('error' in parsed && parsed.error.code).toBe(code);
  });

  it.each([
    [JSON_TYPE, 1],
    ['application/a2a+json; charset=utf-8', 'a'],
    ['Application/JSON', null],
  ])('reads a request sent as %s with id %s', (type, id) => {
    const parsed = parseRequest(type, JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', unknown: 1 }));
    expect(parsed).toEqual({ id, method: 'GetTask', params: {} });
  });

  it.each([
    [undefined, -32009],
    ['', -32009],
    ['0.3', -32009],
    ['1.1', -32009],
    ['10', -32009],
    ['1.0', null],
    [' 1.0 ', null],
    ['1.0.7', null],
  ])('A2A-Version %s → %s', (header, code) => {
    expect(checkVersion(header)?.code ?? null).toBe(code);
  });
});

describe('SendMessage params', () => {
  const message = (extra: Record<string, unknown> = {}) => ({
    messageId: 'm1',
    role: 'ROLE_USER',
    parts: [{ text: 'hi' }],
    ...extra,
  });

  it('joins text parts and compact data parts with newlines, in order', () => {
    const p = parseSendParams({
      message: message({ parts: [{ text: 'a' }, { data: { x: [1, 2] } }, { text: 'b', mediaType: 'text/plain' }] }),
    });
    expect(p.message.text).toBe('a\n{"x":[1,2]}\nb');
    expect(p.returnImmediately).toBe(false);
  });

  it('reads taskId, contextId, metadata and the configuration', () => {
    const p = parseSendParams({
      message: message({ taskId: 't', contextId: 'c', metadata: { a: 1 } }),
      configuration: { returnImmediately: true, historyLength: 3, acceptedOutputModes: ['text/plain'] },
      metadata: { ignored: true },
    });
    expect(p).toEqual({
      message: { messageId: 'm1', taskId: 't', contextId: 'c', text: 'hi', metadata: { a: 1 } },
      returnImmediately: true,
      historyLength: 3,
    });
  });

  it.each([
    [{}, -32602],
    [{ message: message({ messageId: '' }) }, -32602],
    [{ message: message({ messageId: 5 }) }, -32602],
    [{ message: message({ role: 'user' }) }, -32602],
    [{ message: message({ role: undefined }) }, -32602],
    [{ message: message({ role: 'ROLE_UNSPECIFIED' }) }, -32602],
    [{ message: message({ parts: 'hi' }) }, -32602],
    [{ message: message({ parts: [{ text: '' }] }) }, -32602],
    [{ message: message({ parts: [{ data: null }] }) }, -32602],
    [{ message: message({ metadata: [] }) }, -32602],
    [{ message: message({ taskId: 7 }) }, -32602],
    [{ message: message(), configuration: { historyLength: 1.5 } }, -32602],
    [{ message: message(), configuration: [] }, -32602],
    [{ message: message({ parts: [{ url: 'https://x' }] }) }, -32005],
    [{ message: message({ parts: [{ raw: 'AAAA' }] }) }, -32005],
    [{ message: message({ parts: [{ text: 'x'.repeat(100_001) }] }) }, -32602],
    [{ message: message({ parts: [{ text: 'x'.repeat(100_000) }] }) }, 'ok'],
    [{ message: message({ metadata: { v: 'x'.repeat(16_400) } }) }, -32602],
  ])('%j → %s', (params, code) => {
    expect(codeOf(() => parseSendParams(params as Record<string, unknown>))).toBe(code);
  });
});

describe('ListTasks params and page tokens', () => {
  it('defaults to 50 a page from the start', () => {
    expect(parseListParams({})).toEqual({
      contextId: undefined,
      state: undefined,
      pageSize: 50,
      offset: 0,
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    });
  });

  it('reads statusTimestampAfter as a UTC instant with milliseconds', () => {
    const read = (value: string) => parseListParams({ statusTimestampAfter: value }).statusTimestampAfter;
    expect(read('2026-01-31T09:00:00Z')).toBe('2026-01-31T09:00:00.000Z');
    expect(read('2026-01-31T10:00:00.5+01:00')).toBe('2026-01-31T09:00:00.500Z');
    expect(read('')).toBeUndefined();
  });

  it('reads back the token of the next page', () => {
    const token = pageToken(100, 150);
    expect(parseListParams({ pageToken: token, pageSize: 100 }).offset).toBe(100);
    expect(pageToken(150, 150)).toBe('');
  });

  it.each([
    [{ pageSize: 0 }],
    [{ pageSize: 101 }],
    [{ pageSize: 2.5 }],
    [{ pageSize: '10' }],
    [{ pageToken: 'abc' }],
    [{ pageToken: Buffer.from('o:99999999').toString('base64url') }],
    [{ status: 'TASK_STATE_NOPE' }],
    [{ status: 2 }],
    [{ historyLength: -1 }],
    [{ includeArtifacts: 'true' }],
    [{ statusTimestampAfter: 'yesterday' }],
    [{ statusTimestampAfter: '2026-01-31' }],
    [{ statusTimestampAfter: '2026-01-31T25:00:00Z' }],
    [{ statusTimestampAfter: 1769850000 }],
  ])('refuses %j with -32602', (params) => {
    expect(codeOf(() => parseListParams(params))).toBe(-32602);
  });
});

describe('A2A errors of the tasks service refusals', () => {
  it.each([
    [new AppError('NOT_FOUND', 'Task not found'), -32001],
    [new AppError('TASK_NOT_CANCELLABLE', 'done'), -32002],
    [new AppError('TASK_NOT_ACCEPTING_MESSAGES', 'done'), -32004],
    [new AppError('AGENT_UNAVAILABLE', 'paused'), -32004],
    [new AppError('INVALID_REQUEST', 'bad'), -32602],
    [new AppError('LIMIT_EXCEEDED', 'too many messages'), -32602],
  ])('%s → %i', (err, code) => {
    expect((rpcErrorOf(err) as RpcError).code).toBe(code);
  });

  it('passes on what A2A has no code for: the cap on waits (429) and unexpected errors', () => {
    const capped = new AppError('LIMIT_EXCEEDED', 'too many waits', undefined, 429);
    expect(rpcErrorOf(capped)).toBe(capped);
    const unexpected = new Error('db down');
    expect(rpcErrorOf(unexpected)).toBe(unexpected);
    expect(parseListParams({ status: 'TASK_STATE_UNSPECIFIED' }).state).toBeUndefined();
  });
});
