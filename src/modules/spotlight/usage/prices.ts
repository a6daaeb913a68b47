import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../config.js';

/**
 * US dollars per million tokens. The cache prices are optional: a missing `cache_read` or
 * `cache_write` is `input`, a missing `cache_write_1h` is `cache_write`.
 */
export interface ModelPrice {
  input: number;
  output: number;
  /** Input read from the provider's prompt cache. */
  cache_read?: number;
  /** Input written to the provider's prompt cache (Anthropic: the 5-minute cache). */
  cache_write?: number;
  /** Input written to Anthropic's 1-hour cache. */
  cache_write_1h?: number;
}
export type PriceTable = Record<string, ModelPrice>;

/**
 * List prices of common OpenAI models, USD per million tokens, as published when this table was
 * written. Prices change and other servers charge differently: operators override or extend the
 * table with TASKHOOK_MODEL_PRICES_FILE. Dated snapshots (gpt-4o-2024-08-06) use the price of the
 * name without their suffix (see `priceOf`); a name is never priced by a shorter name it starts with
 * (o1-pro is not o1), so each model of a family that costs differently has its own entry.
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
  'o1-pro': { input: 150, output: 600 },
  o3: { input: 2, output: 8 },
  'o3-pro': { input: 20, output: 80 },
  'o3-mini': { input: 1.1, output: 4.4 },
  'o4-mini': { input: 1.1, output: 4.4 },
  ...anthropic(['claude-opus-4-6', 'claude-opus-4-5'], 5, 25, 0.5, 6.25, 10),
  ...anthropic(['claude-sonnet-4-6', 'claude-sonnet-4-5', 'claude-sonnet-4', 'claude-3-7-sonnet'], 3, 15, 0.3, 3.75, 6),
  ...anthropic(['claude-haiku-4-5'], 1, 5, 0.1, 1.25, 2),
  ...anthropic(['claude-opus-4-1', 'claude-opus-4'], 15, 75, 1.5, 18.75, 30),
  ...anthropic(['claude-3-5-haiku'], 0.8, 4, 0.08, 1, 1.6),
  ...anthropic(['claude-3-haiku'], 0.25, 1.25, 0.03, 0.3, 0.5),
};

/** Anthropic's published list prices (standard rate) for several models that cost the same. */
function anthropic(
  models: string[],
  input: number,
  output: number,
  cache_read: number,
  cache_write: number,
  cache_write_1h: number,
): PriceTable {
  return Object.fromEntries(models.map((m) => [m, { input, output, cache_read, cache_write, cache_write_1h }]));
}

const PRICE_KEYS = new Set(['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h']);
const isAmount = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

const isPrice = (v: unknown): v is ModelPrice =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.keys(v).every((k) => PRICE_KEYS.has(k)) &&
  Object.values(v).every(isAmount) &&
  isAmount((v as ModelPrice).input) &&
  isAmount((v as ModelPrice).output);

/** Why a price-file key is refused, or null: `*` only as the last character of a family key. */
function badKey(key: string): string | null {
  if (key === '*') return 'a family key needs a name before its "*"';
  const star = key.indexOf('*');
  if (star !== -1 && star !== key.length - 1) return '"*" may only end a key (a family entry such as "acme-ft-*")';
  return null;
}

/**
 * The shipped table with the operator's file laid over it (its entries win). A key ending in `*`
 * is a family entry (`"acme-ft-*"` prices every name starting with `acme-ft-`).
 * @throws ConfigError naming TASKHOOK_MODEL_PRICES_FILE when the file cannot be read or is not
 * `{"<model>": {"input": <USD per 1M>, "output": <USD per 1M>}, …}`, or a key is `*` alone or has
 * `*` anywhere but at its end.
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
    const why = badKey(model);
    if (why) throw new ConfigError(`TASKHOOK_MODEL_PRICES_FILE: key "${model}": ${why}`);
    if (!isPrice(price)) {
      throw new ConfigError(
        `TASKHOOK_MODEL_PRICES_FILE: "${model}" must be {"input": <USD per 1M tokens>, "output": <USD per 1M tokens>} with optional "cache_read", "cache_write" and "cache_write_1h" (numbers >= 0)`,
      );
    }
  }
  return { ...SHIPPED_PRICES, ...(parsed as PriceTable) };
}

/**
 * A snapshot suffix at the end of a model name: `-YYYY-MM-DD`, `-YYYYMMDD`, exactly four digits
 * (`-0613`) or `-latest`. Digits are not checked as dates.
 */
const SNAPSHOT_SUFFIX = /-(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{8}|[0-9]{4}|latest)$/;

/** A name's own entry (exact, case-sensitive; family keys are never own entries). */
function ownEntry(table: PriceTable, name: string): ModelPrice | undefined {
  return !name.endsWith('*') && Object.hasOwn(table, name) ? table[name] : undefined;
}

/** The longest family key (`prefix*`) whose prefix starts the name. */
function familyEntry(table: PriceTable, name: string): ModelPrice | undefined {
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (!key.endsWith('*') || key.length === 1) continue;
    if (name.startsWith(key.slice(0, -1)) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

function lookup(table: PriceTable, name: string): ModelPrice | undefined {
  const own = ownEntry(table, name);
  if (own) return own;
  const base = name.replace(SNAPSHOT_SUFFIX, '');
  if (base !== name) {
    const snapshot = ownEntry(table, base);
    if (snapshot) return snapshot;
  }
  return familyEntry(table, name);
}

/**
 * The price of a model, by the first of: its own entry; the own entry of the name without one
 * snapshot suffix (`gpt-4o-2024-08-06` → `gpt-4o`); the longest family entry (`key*`) it starts
 * with; the same three for the part after its last `/` (`openai/gpt-4o` → `gpt-4o`). Never by a
 * shorter name it merely starts with: `o1-pro` is not `o1`, `gpt-4o-mini` is not `gpt-4o`.
 */
export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  const found = lookup(table, model);
  if (found) return found;
  const slash = model.lastIndexOf('/');
  return slash === -1 ? undefined : lookup(table, model.slice(slash + 1));
}

/** Input tokens served from (`read`) or written to (`write`, of which `write1h` to the 1-hour cache) a prompt cache. */
export interface CacheTokens {
  read: number | null;
  write: number | null;
  write1h: number;
}

/**
 * Cost in billionths of a dollar (exact integer sums), or null when the price or the usage is
 * unknown. `inputTokens` includes cached input: the part neither read from nor written to the
 * provider's cache is charged `input`, the rest its cache price, rounded once.
 */
export function costNanos(
  table: PriceTable,
  model: string,
  inputTokens: number | null,
  outputTokens: number | null,
  cache: CacheTokens = { read: null, write: null, write1h: 0 },
): number | null {
  const price = priceOf(table, model);
  if (!price || (inputTokens === null && outputTokens === null)) return null;
  const read = cache.read ?? 0;
  const write = cache.write ?? 0;
  const write1h = Math.min(cache.write1h, write);
  const plain = Math.max(0, (inputTokens ?? 0) - read - write);
  const cacheWrite = price.cache_write ?? price.input;
  // USD per 1M tokens × 1e9 nanos per USD ÷ 1e6 tokens = × 1000 nanos per token.
  return Math.round(
    plain * price.input * 1000 +
      read * (price.cache_read ?? price.input) * 1000 +
      (write - write1h) * cacheWrite * 1000 +
      write1h * (price.cache_write_1h ?? cacheWrite) * 1000 +
      (outputTokens ?? 0) * price.output * 1000,
  );
}
