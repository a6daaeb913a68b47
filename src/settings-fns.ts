// The pieces of the settings table: what a setting is, and the parsers of the variables whose
// text the schema alone does not describe.
import { isIP } from 'node:net';
import type { Static, TSchema } from '@sinclair/typebox';

/** One setting: the variable that sets it, its schema, its default and the README's words for it. */
export interface Setting<S extends TSchema> {
  env: string;
  schema: S;
  /** Used when the variable is unset or empty; a function sees the settings read before it. */
  default?: Static<S> | ((read: Readonly<Record<string, unknown>>) => Static<S>);
  /** The default as the README shows it (Markdown), when the value alone does not say it well. */
  defaultText?: string;
  /** What the README says the setting does. */
  doc: string;
  /** Applied to a value read from the environment (not to defaults). */
  normalize?: (value: Static<S>) => Static<S>;
  /** Reads the variable's text when the schema's type alone does not say how. @throws ConfigError */
  parse?: (raw: string, name: string) => Static<S>;
}

/** A setting with its value type erased, for the code that walks the table. */
export interface AnySetting {
  env: string;
  schema: TSchema;
  default?: unknown;
  defaultText?: string;
  doc: string;
  normalize?: (value: never) => unknown;
  parse?: (raw: string, name: string) => unknown;
}

export const setting = <S extends TSchema>(s: Setting<S>) => s;
export const HTTP_URL = '^https?://[^\\s]+$';
export const stripSlashes = (url: string) => url.replace(/\/+$/, '');

/** Comma-separated values, blanks dropped. */
export function parseList(raw: string): string[] {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** Browser origins (`scheme://host[:port]`), or `*` for any. */
export function parseOrigins(raw: string, name: string): string[] {
  return raw
    .split(',')
    .map((part) => stripSlashes(part.trim()))
    .filter((part) => part !== '')
    .map((origin) => {
      if (origin === '*') return origin;
      let parsed: string | undefined;
      try {
        parsed = new URL(origin).origin;
      } catch {}
      if (parsed !== origin.toLowerCase() || !/^https?:/.test(origin)) {
        throw new ConfigError(`${name} must list origins such as https://app.example.com, got "${origin}"`);
      }
      return parsed;
    });
}
/**
 * `TASKHOOK_TRUST_PROXY`, in Fastify's `trustProxy` terms: true/false, a hop count (trust that many
 * proxies in front), or a comma-separated list of proxy addresses and CIDR ranges.
 */
export function parseTrustProxy(raw: string, name: string): boolean | number | string[] {
  const lower = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(lower)) return true;
  if (['0', 'false', 'no', 'off'].includes(lower)) return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((entry) => {
      const [address = '', prefix, extra] = entry.split('/');
      const family = isIP(address);
      const bits = family === 4 ? 32 : 128;
      const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
      if (family === 0 || !prefixOk || extra !== undefined) {
        throw new ConfigError(
          `${name} must be true, false, a hop count, or comma-separated addresses/CIDRs (10.0.0.0/8), got "${entry}"`,
        );
      }
      return entry;
    });
}

/** A malformed setting; the message names its variable. */
export class ConfigError extends Error {}
