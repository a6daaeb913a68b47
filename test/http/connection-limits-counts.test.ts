import { describe, expect, it } from 'vitest';
import { CONNECTION_LIMITS, createConnectionLimits } from '../../src/http/connection-limits.js';
import { AppError } from '../../src/http/errors.js';

describe('connection limits', () => {
  it('are 50 streams and 100 waits per workspace by default', () => {
    expect(CONNECTION_LIMITS).toEqual({ stream: 50, wait: 100, proxy: 32 });
  });

  it('refuses one more than the limit with 429 LIMIT_EXCEEDED, per workspace and per kind', () => {
    const limits = createConnectionLimits({ stream: 2, wait: 1 });
    const releases = [limits.acquire('u1', 'stream'), limits.acquire('u1', 'stream')];
    let refused: unknown;
    try {
      limits.acquire('u1', 'stream');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'LIMIT_EXCEEDED', status: 429 });
    expect((refused as Error).message).toBe('At most 2 open event streams per workspace at once: close one first');
    // Another user, and another kind, are counted apart.
    expect(() => limits.acquire('u2', 'stream')).not.toThrow();
    expect(() => limits.acquire('u1', 'wait')).not.toThrow();
    expect(() => limits.acquire('u1', 'wait')).toThrow('At most 1 waiting requests per workspace');
    expect(limits.held('u1', 'stream')).toBe(2);

    releases[0]?.();
    expect(limits.held('u1', 'stream')).toBe(1);
    expect(() => limits.acquire('u1', 'stream')).not.toThrow();
  });

  it('counts a release once, however often it is called', () => {
    const limits = createConnectionLimits({ stream: 1, wait: 1 });
    const release = limits.acquire('u', 'stream');
    const other = createConnectionLimits({ stream: 1, wait: 1 }).acquire('u', 'stream');
    release();
    release();
    other();
    expect(limits.held('u', 'stream')).toBe(0);
    const again = limits.acquire('u', 'stream');
    expect(() => limits.acquire('u', 'stream')).toThrow();
    again();
    expect(limits.held('u', 'stream')).toBe(0);
  });
});
