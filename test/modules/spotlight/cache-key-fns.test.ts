import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cacheKey,
  cachePolicySeconds,
  canonicalBody,
  canonicalJson,
  parseCacheHeader,
} from '../../../src/modules/spotlight/cache/cache-key-fns.js';

const target = {
  kind: 'credential',
  credentialUuid: 'c1',
  credentialUpdatedAt: 't1',
  upstreamModel: 'gpt-4o',
} as const;

/** Rebuilds a JSON value with every object's keys in a shuffled order (seeded by fast-check). */
function shuffleKeys(value: unknown, pick: (n: number) => number): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, pick));
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    const out: Record<string, unknown> = {};
    while (keys.length > 0) {
      const [key] = keys.splice(pick(keys.length), 1) as [string];
      Object.defineProperty(out, key, {
        value: shuffleKeys((value as Record<string, unknown>)[key], pick),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** JSON text of a value with every integer written another way (`5` as `5.0`, `-0` as `-0.0`). */
function respell(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(respell).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${respell(v)}`)
      .join(',')}}`;
  }
  if (typeof value === 'number' && Number.isInteger(value) && !/e/i.test(String(value))) return `${value}.0`;
  return JSON.stringify(value);
}

const jsonObject = fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 6 });

describe('X-Taskhook-Cache header', () => {
  it('reads max-age within 1–86400 and no-store, whitespace around ignored', () => {
    expect(parseCacheHeader(undefined)).toEqual({ kind: 'absent' });
    expect(parseCacheHeader(' max-age=60 ')).toEqual({ kind: 'max-age', seconds: 60 });
    expect(parseCacheHeader('max-age=1')).toEqual({ kind: 'max-age', seconds: 1 });
    expect(parseCacheHeader('max-age=86400')).toEqual({ kind: 'max-age', seconds: 86400 });
    expect(parseCacheHeader('\tno-store')).toEqual({ kind: 'no-store' });
  });

  it('refuses anything else', () => {
    for (const bad of [
      '',
      'max-age=0',
      'max-age=86401',
      'max-age=-1',
      'max-age=1.5',
      'max-age = 5',
      'public',
      'max-age=',
      'no-cache',
    ]) {
      expect(parseCacheHeader(bad), bad).toEqual({ kind: 'invalid' });
    }
    expect(parseCacheHeader(['max-age=5', 'max-age=6'])).toEqual({ kind: 'invalid' });
  });

  it('the header wins over the route default; no-store turns it off', () => {
    expect(cachePolicySeconds({ kind: 'max-age', seconds: 5 }, 60)).toBe(5);
    expect(cachePolicySeconds({ kind: 'no-store' }, 60)).toBeNull();
    expect(cachePolicySeconds({ kind: 'absent' }, 60)).toBe(60);
    expect(cachePolicySeconds({ kind: 'absent' }, null)).toBeNull();
  });
});

describe('canonical body', () => {
  it('sorts keys by UTF-16 code units, spells numbers and strings by value', () => {
    expect(canonicalJson(JSON.parse('{"b":1.0,"a":[2,{"d":"\\u0041","c":1e2}]}'))).toBe(
      '{"a":[2,{"c":100,"d":"A"}],"b":1}',
    );
    // U+FF5E sorts after U+1F600's high surrogate (0xD83D) in UTF-16 order, the opposite of code-point order.
    expect(canonicalJson({ '\uff5e': 1, '\u{1f600}': 2 })).toBe('{"\u{1f600}":2,"\uff5e":1}');
  });

  it('keeps a __proto__ key as a key', () => {
    expect(canonicalBody(JSON.parse('{"__proto__":{"a":1},"b":2}'))).toBe('{"__proto__":{"a":1},"b":2}');
  });

  it('leaves out model, user and stream_options but keeps stream', () => {
    expect(canonicalBody({ model: 'x', user: 'u', stream_options: { include_usage: true }, stream: true, n: 1 })).toBe(
      '{"n":1,"stream":true}',
    );
  });

  it('key order and number spelling do not change the key', () => {
    fc.assert(
      fc.property(jsonObject, fc.infiniteStream(fc.nat()), (body, seeds) => {
        const iter = seeds[Symbol.iterator]();
        const shuffled = shuffleKeys(body, (n) => (iter.next().value as number) % n) as Record<string, unknown>;
        const respelled = JSON.parse(respell(shuffled));
        expect(cacheKey('w', target, shuffled)).toBe(cacheKey('w', target, body));
        expect(cacheKey('w', target, respelled)).toBe(cacheKey('w', target, body));
      }),
    );
  });

  it('any change of a value changes the key', () => {
    fc.assert(
      fc.property(jsonObject, fc.string(), fc.jsonValue(), (body, field, value) => {
        fc.pre(!['model', 'user', 'stream_options'].includes(field));
        const changed = JSON.parse(JSON.stringify(body));
        Object.defineProperty(changed, field, { value, enumerable: true, writable: true, configurable: true });
        fc.pre(canonicalBody(changed) !== canonicalBody(body));
        expect(cacheKey('w', target, changed)).not.toBe(cacheKey('w', target, body));
      }),
    );
  });

  it('the workspace and the target are part of the key', () => {
    const body = { messages: [{ role: 'user', content: 'hi' }] };
    expect(cacheKey('w1', target, body)).not.toBe(cacheKey('w2', target, body));
    expect(cacheKey('w1', target, body)).not.toBe(cacheKey('w1', { ...target, credentialUpdatedAt: 't2' }, body));
    const route = { kind: 'route', routeUuid: 'r', routeUpdatedAt: 'u1', credentialUpdatedAts: ['a', 'b'] } as const;
    expect(cacheKey('w1', route, body)).not.toBe(cacheKey('w1', { ...route, credentialUpdatedAts: ['a', 'c'] }, body));
    expect(cacheKey('w1', target, { ...body, stream: true })).not.toBe(cacheKey('w1', target, body));
  });
});
