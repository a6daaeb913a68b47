import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../config.js';

/** US dollars per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
}
export type PriceTable = Record<string, ModelPrice>;

/**
 * List prices of common OpenAI models, USD per million tokens, as published when this table was
 * written. Prices change and other servers charge differently: operators override or extend the
 * table with TASKHOOK_MODEL_PRICES_FILE. Dated snapshots (gpt-4o-2024-08-06) use their family's
 * price through the prefix rule of `priceOf`.
 */
export const SHIPPED_PRICES: PriceTable = {
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4-turbo': { input: 10, output: 30 },
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
  o1: { input: 15, output: 60 },
  o3: { input: 2, output: 8 },
  'o3-mini': { input: 1.1, output: 4.4 },
  'o4-mini': { input: 1.1, output: 4.4 },
};

const isPrice = (v: unknown): v is ModelPrice =>
  typeof v === 'object' &&
  v !== null &&
  Object.keys(v).every((k) => k === 'input' || k === 'output') &&
  [(v as ModelPrice).input, (v as ModelPrice).output].every(
    (n) => typeof n === 'number' && Number.isFinite(n) && n >= 0,
  );

/**
 * The shipped table with the operator's file laid over it (its entries win).
 * @throws ConfigError naming TASKHOOK_MODEL_PRICES_FILE when the file cannot be read or is not
 * `{"<model>": {"input": <USD per 1M>, "output": <USD per 1M>}, …}`.
 */
export function loadPriceTable(file: string | undefined): PriceTable {
  if (!file) return SHIPPED_PRICES;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`TASKHOOK_MODEL_PRICES_FILE: cannot read ${file} as JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('TASKHOOK_MODEL_PRICES_FILE must hold a JSON object of model → {input, output}');
  }
  for (const [model, price] of Object.entries(parsed)) {
    if (!isPrice(price)) {
      throw new ConfigError(
        `TASKHOOK_MODEL_PRICES_FILE: "${model}" must be {"input": <USD per 1M tokens>, "output": <USD per 1M tokens>}`,
      );
    }
  }
  return { ...SHIPPED_PRICES, ...(parsed as PriceTable) };
}

/**
 * The price of a model: its own entry, else the longest entry it extends with "-" (a dated
 * snapshot), looked up also without a router prefix (`openai/gpt-4o` → `gpt-4o`).
 */
export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  for (const name of [model, model.slice(model.lastIndexOf('/') + 1)]) {
    const exact = table[name];
    if (exact) return exact;
    let best: string | undefined;
    for (const key of Object.keys(table)) {
      if (name.startsWith(`${key}-`) && (!best || key.length > best.length)) best = key;
    }
    if (best) return table[best];
  }
  return undefined;
}

/** Cost in billionths of a dollar (exact integer sums), or null when the price or the usage is unknown. */
export function costNanos(
  table: PriceTable,
  model: string,
  inputTokens: number | null,
  outputTokens: number | null,
): number | null {
  const price = priceOf(table, model);
  if (!price || (inputTokens === null && outputTokens === null)) return null;
  // USD per 1M tokens × 1e9 nanos per USD ÷ 1e6 tokens = × 1000 nanos per token.
  return Math.round((inputTokens ?? 0) * price.input * 1000 + (outputTokens ?? 0) * price.output * 1000);
}
