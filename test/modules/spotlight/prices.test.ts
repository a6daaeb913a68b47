import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  costNanos,
  loadPriceTable,
  type PriceTable,
  priceOf,
  SHIPPED_PRICES,
} from '../../../src/modules/spotlight/usage/prices.js';
import { tempDir } from '../../helpers/databases.js';

/** The price file's table: written to disk and loaded as the server loads it. */
function tableOf(entries: Record<string, unknown>): PriceTable {
  const file = path.join(tempDir(), 'prices.json');
  writeFileSync(file, JSON.stringify(entries));
  return loadPriceTable(file);
}

describe('price lookup', () => {
  it('finds own entries, one snapshot suffix removed once, and router prefixes', () => {
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-mini')).toEqual({ input: 0.15, output: 0.6 });
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-mini-2024-07-18')).toEqual({ input: 0.15, output: 0.6 });
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-2024-08-06')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-20240806')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-0613')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-latest')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'openai/gpt-4o')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'router/openai/gpt-4o-2024-08-06')).toEqual({ input: 2.5, output: 10 });
    // Digits are not checked as dates.
    expect(priceOf(SHIPPED_PRICES, 'gpt-4o-9999-99-99')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(SHIPPED_PRICES, 'llama3')).toBeUndefined();
    expect(priceOf(SHIPPED_PRICES, 'gpt-4omega')).toBeUndefined();
  });

  it('ships o1, o1-pro, o3 and o3-pro at their own list prices', () => {
    expect(priceOf(SHIPPED_PRICES, 'o1')).toEqual({ input: 15, output: 60 });
    expect(priceOf(SHIPPED_PRICES, 'o1-pro')).toEqual({ input: 150, output: 600 });
    expect(priceOf(SHIPPED_PRICES, 'o1-pro-2025-03-19')).toEqual({ input: 150, output: 600 });
    expect(priceOf(SHIPPED_PRICES, 'o3')).toEqual({ input: 2, output: 8 });
    expect(priceOf(SHIPPED_PRICES, 'o3-pro')).toEqual({ input: 20, output: 80 });
    expect(priceOf(SHIPPED_PRICES, 'o3-2025-04-16')).toEqual({ input: 2, output: 8 });
  });

  it('never prices a name by a shorter name it only starts with', () => {
    const table = tableOf({ x: { input: 1, output: 2 } });
    // Without entries of their own: o1-pro is not o1, gpt-4o-mini is not gpt-4o.
    const bare = tableOf({ o1: { input: 15, output: 60 }, 'gpt-4o': { input: 2.5, output: 10 } });
    const only = (name: string): PriceTable => ({ [name]: bare[name] as { input: number; output: number } });
    expect(priceOf(only('o1'), 'o1-pro')).toBeUndefined();
    expect(priceOf(only('gpt-4o'), 'gpt-4o-mini')).toBeUndefined();
    expect(priceOf(only('gpt-4o'), 'gpt-4o-mini-2024-07-18')).toBeUndefined();
    for (const name of ['x-pro', 'x-mini-2025-01-31', 'x-12345', 'x-123', 'x-2025-01-31-beta', 'x-latest-1', 'X']) {
      expect({ name, price: priceOf(table, name) }).toEqual({ name, price: undefined });
    }
    // One suffix, removed once.
    expect(priceOf(table, 'x-2025-01-31')).toEqual({ input: 1, output: 2 });
    expect(priceOf(table, 'x-0613-0613')).toBeUndefined();
    expect(priceOf(table, 'x-latest-latest')).toBeUndefined();
    // A model named like an object's property is not priced by it.
    expect(priceOf(table, 'toString')).toBeUndefined();
    expect(priceOf(table, 'constructor')).toBeUndefined();
  });

  it('prices a family only through its explicit key*, the longest key winning', () => {
    const table = tableOf({
      x: { input: 1, output: 2 },
      'x-*': { input: 5, output: 6 },
      'x-mini-*': { input: 7, output: 8 },
      'acme-ft-*': { input: 9, output: 10 },
    });
    expect(priceOf(table, 'x')).toEqual({ input: 1, output: 2 });
    expect(priceOf(table, 'x-2025-01-31')).toEqual({ input: 1, output: 2 });
    expect(priceOf(table, 'x-pro')).toEqual({ input: 5, output: 6 });
    expect(priceOf(table, 'x-12345')).toEqual({ input: 5, output: 6 });
    expect(priceOf(table, 'x-2025-01-31-beta')).toEqual({ input: 5, output: 6 });
    expect(priceOf(table, 'x-mini-2025-01-31')).toEqual({ input: 7, output: 8 });
    expect(priceOf(table, 'tenant/acme-ft-42')).toEqual({ input: 9, output: 10 });
    expect(priceOf(table, 'acme-ft')).toBeUndefined();
    // The family key is not an own entry, and the shipped table has no family entries.
    expect(priceOf(table, 'x-*')).toEqual({ input: 5, output: 6 });
    expect(Object.keys(SHIPPED_PRICES).some((k) => k.includes('*'))).toBe(false);
  });

  it('computes exact costs in billionths of a dollar', () => {
    expect(costNanos(SHIPPED_PRICES, 'gpt-4o', 1_000_000, 1_000_000)).toBe(12_500_000_000);
    expect(costNanos(SHIPPED_PRICES, 'gpt-4o-mini', 11, 7)).toBe(5850);
    expect(costNanos(SHIPPED_PRICES, 'gpt-4o', null, 10)).toBe(100_000);
    expect(costNanos(SHIPPED_PRICES, 'gpt-4o', null, null)).toBeNull();
    expect(costNanos(SHIPPED_PRICES, 'unknown', 10, 10)).toBeNull();
    expect(costNanos(SHIPPED_PRICES, 'o1-pro', 1000, 1000)).toBe(750_000_000);
  });

  it("prices Anthropic's models with their cache columns, dated ids through the snapshot rule", () => {
    expect(priceOf(SHIPPED_PRICES, 'claude-sonnet-4-5-20250929')).toEqual({
      input: 3,
      output: 15,
      cache_read: 0.3,
      cache_write: 3.75,
      cache_write_1h: 6,
    });
    expect(priceOf(SHIPPED_PRICES, 'claude-opus-4-20250514')?.input).toBe(15);
    expect(priceOf(SHIPPED_PRICES, 'claude-haiku-4-5')?.output).toBe(5);
    expect(priceOf(SHIPPED_PRICES, 'claude-3-haiku')?.cache_read).toBe(0.03);
    // input 20 + written 100 + read 1000 → 1120 recorded; 10 output tokens.
    const cache = { read: 1000, write: 100, write1h: 0 };
    // 20×3 + 1000×0.3 + 100×3.75 + 10×15 (×1000 nanos per USD per 1M tokens)
    expect(costNanos(SHIPPED_PRICES, 'claude-sonnet-4-5', 1120, 10, cache)).toBe(885_000);
    // 40 of the 100 written tokens went to the 1-hour cache: 60×3.75 + 40×6 instead of 100×3.75.
    expect(costNanos(SHIPPED_PRICES, 'claude-sonnet-4-5', 1120, 10, { ...cache, write1h: 40 })).toBe(975_000);
    // Without cache prices, cached input costs the input price: the old formula.
    expect(costNanos(SHIPPED_PRICES, 'gpt-4o', 1000, 0, { read: 400, write: null, write1h: 0 })).toBe(2_500_000);
    expect(
      costNanos({ m: { input: 2, output: 8, cache_read: 0.5 } }, 'm', 1000, 0, { read: 400, write: null, write1h: 0 }),
    ).toBe(1_400_000);
  });
});

describe('price file', () => {
  it("lays the operator's file over the shipped table and refuses a malformed one", () => {
    const dir = tempDir();
    const file = path.join(dir, 'prices.json');
    writeFileSync(file, JSON.stringify({ 'gpt-4o': { input: 1, output: 2 }, llama3: { input: 0, output: 0 } }));
    const table = loadPriceTable(file);
    expect(table['gpt-4o']).toEqual({ input: 1, output: 2 });
    expect(table.llama3).toEqual({ input: 0, output: 0 });
    expect(table['gpt-4o-mini']).toEqual(SHIPPED_PRICES['gpt-4o-mini']);
    expect(loadPriceTable(undefined)).toBe(SHIPPED_PRICES);
    const cached = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6 };
    writeFileSync(file, JSON.stringify({ 'acme-claude': cached }));
    expect(loadPriceTable(file)['acme-claude']).toEqual(cached);
    for (const bad of [
      '[]',
      '{"m": {"input": -1, "output": 1}}',
      '{"m": {"input": 1}}',
      '{"m": {"input": 1, "output": 1, "x": 1}}',
      '{"m": {"input": 1, "output": 1, "cache_read": -0.1}}',
      '{"m": {"input": 1, "output": 1, "cache_write": "1"}}',
      'nope',
    ]) {
      writeFileSync(file, bad);
      expect(() => loadPriceTable(file)).toThrow(/TASKHOOK_MODEL_PRICES_FILE/);
    }
    expect(() => loadPriceTable(path.join(dir, 'missing.json'))).toThrow(/TASKHOOK_MODEL_PRICES_FILE/);
  });

  it('stops at a key that is * alone or has * anywhere but at its end', () => {
    const price = { input: 1, output: 1 };
    for (const key of ['*', 'x*y', '*x', 'x-**', 'a*b*']) {
      expect(() => tableOf({ [key]: price }), key).toThrow(/TASKHOOK_MODEL_PRICES_FILE.*\*/);
    }
    expect(() => tableOf({ 'x-*': price, 'x*': price })).not.toThrow();
  });
});
