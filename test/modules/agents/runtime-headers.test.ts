import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import {
  maskRuntimeHeaders,
  openRuntimeHeaders,
  sealRuntimeHeaders,
} from '../../../src/modules/agents/runtime-headers.js';
import type { Runtime } from '../../../src/modules/agents/runtime-schemas.js';

const box = createSecretBox('a test encryption key of enough length');
const http = (headers?: Record<string, string>): Runtime => ({
  type: 'http',
  url: 'https://agent.example/run',
  ...(headers ? { headers } : {}),
});
const headersOf = (r: Runtime) => (r.type === 'http' ? r.headers : undefined);
const fieldOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.details?.field : 'not an AppError';
  }
  return 'no error';
};

describe('runtime header values at rest and in answers', () => {
  it('seals every value, opens it back, and masks it in answers', () => {
    const sealed = sealRuntimeHeaders(http({ Authorization: 'Bearer s3cret', 'X-Empty': '' }), null, box);
    expect(JSON.stringify(sealed)).not.toContain('s3cret');
    expect(openRuntimeHeaders(sealed, box)).toEqual(http({ Authorization: 'Bearer s3cret', 'X-Empty': '' }));
    expect(maskRuntimeHeaders(sealed)).toEqual(http({ Authorization: '********', 'X-Empty': '********' }));
  });

  it('leaves runtimes without headers as they are', () => {
    for (const runtime of [http(), { type: 'worker' } as Runtime]) {
      expect(sealRuntimeHeaders(runtime, null, box)).toEqual(runtime);
      expect(maskRuntimeHeaders(runtime)).toEqual(runtime);
      expect(openRuntimeHeaders(runtime, box)).toEqual(runtime);
    }
  });

  it('keeps the stored value for a mask (names compare case-insensitively) and replaces the others', () => {
    const before = sealRuntimeHeaders(http({ 'X-Key': 'old', 'X-Gone': 'g' }), null, box);
    const after = sealRuntimeHeaders(http({ 'x-key': '********', 'X-New': 'n' }), before, box);
    expect(headersOf(after)?.['x-key']).toBe(headersOf(before)?.['X-Key']);
    expect(openRuntimeHeaders(after, box)).toEqual(http({ 'x-key': 'old', 'X-New': 'n' }));
  });

  it('refuses a mask with nothing stored behind it, and names that differ only in case', () => {
    expect(fieldOf(() => sealRuntimeHeaders(http({ 'X-Key': '********' }), null, box))).toBe('runtime.headers');
    const before = sealRuntimeHeaders(http({ 'X-Key': 'old' }), null, box);
    expect(fieldOf(() => sealRuntimeHeaders(http({ 'X-Other': '********' }), before, box))).toBe('runtime.headers');
    expect(fieldOf(() => sealRuntimeHeaders(http({ 'X-A': '1', 'x-a': '2' }), null, box))).toBe('runtime.headers');
  });
});
