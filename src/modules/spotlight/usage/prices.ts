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
};

const isPrice = (v: unknown): v is ModelPrice =>
  typeof v === 'object' &&
  v !== null &&
  Object.keys(v).every((k) => k === 'input' || k === 'output') &&
  [(v as ModelPrice).input, (v as ModelPrice).output].every(
    (n) => typeof n === 'number' && Number.isFinite(n) && n >= 0,
  );

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
        `TASKHOOK_MODEL_PRICES_FILE: "${model}" must be {"input": <USD per 1M tokens>, "output": <USD per 1M tokens>}`,
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
