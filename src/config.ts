import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DEFAULT_RETRY_SCHEDULE, SETTINGS, type SettingKey, type Settings } from './settings.js';
import { type AnySetting, ConfigError } from './settings-fns.js';

export { ConfigError, DEFAULT_RETRY_SCHEDULE, SETTINGS };

/** The identity providers that are turned on, built from the TASKHOOK_OAUTH_* settings. */
export const OAuthConfigSchema = Type.Object({
  google: Type.Optional(Type.Object({ clientId: Type.String(), clientSecret: Type.String(), issuer: Type.String() })),
  github: Type.Optional(
    Type.Object({
      clientId: Type.String(),
      clientSecret: Type.String(),
      baseUrl: Type.String(),
      apiUrl: Type.String(),
    }),
  ),
  redirectUrl: Type.Optional(Type.String()),
  stateTtlSeconds: Type.Integer({ minimum: 1, maximum: 3600 }),
});

/** The whole configuration: every setting, plus what is derived from several of them. */
export const ConfigSchema = Type.Object({
  ...(Object.fromEntries(Object.entries(SETTINGS).map(([key, s]) => [key, s.schema])) as {
    [K in SettingKey]: Settings[K]['schema'];
  }),
  oauth: OAuthConfigSchema,
});

export type Config = Static<typeof ConfigSchema>;

const settingEntries = () => Object.entries(SETTINGS) as unknown as [SettingKey, AnySetting][];

type Env = Record<string, string | undefined>;

/** The schema's own type name, looking through Optional. */
function typeOf(schema: TSchema): string {
  if (schema.anyOf) return 'string';
  return String(schema.type);
}

/** Turns one variable's text into the type its schema asks for. @throws ConfigError */
function parseValue(name: string, raw: string, schema: TSchema): unknown {
  switch (typeOf(schema)) {
    case 'integer':
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
      return Number(raw);
    case 'boolean': {
      const lower = raw.toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(lower)) return true;
      if (['0', 'false', 'no', 'off'].includes(lower)) return false;
      throw new ConfigError(`${name} must be true or false, got "${raw}"`);
    }
    case 'array': {
      const parts = raw.split(',').map((p) => p.trim());
      if (parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) {
        throw new ConfigError(`${name} must be comma-separated non-negative numbers, got "${raw}"`);
      }
      return parts.map(Number);
    }
    default:
      return raw;
  }
}

/**
 * Reads and validates the configuration from environment variables. Empty values count as unset.
 * @throws ConfigError naming the offending variable when a value is malformed.
 */
export function loadConfig(env: Env = process.env): Config {
  const read: Record<string, unknown> = {};
  for (const [key, s] of settingEntries()) {
    const raw = env[s.env]?.trim();
    if (raw !== undefined && raw !== '') {
      const value = s.parse ? s.parse(raw, s.env) : parseValue(s.env, raw, s.schema);
      read[key] = s.normalize ? s.normalize(value as never) : value;
    } else if (s.default !== undefined) {
      read[key] = typeof s.default === 'function' ? s.default(read) : s.default;
    }
  }
  read.oauth = deriveOAuth(read as Omit<Config, 'oauth'>);
  return validateConfig(read as Config);
}

/** Both halves of a client credential, or neither. @throws ConfigError naming the missing one */
function clientPair(id: string | undefined, secret: string | undefined, prefix: string) {
  if (id === undefined && secret === undefined) return undefined;
  if (id === undefined) throw new ConfigError(`${prefix}_CLIENT_ID is required when ${prefix}_CLIENT_SECRET is set`);
  if (secret === undefined)
    throw new ConfigError(`${prefix}_CLIENT_SECRET is required when ${prefix}_CLIENT_ID is set`);
  return { clientId: id, clientSecret: secret };
}

function deriveOAuth(c: Omit<Config, 'oauth'>): Config['oauth'] {
  const google = clientPair(c.oauthGoogleClientId, c.oauthGoogleClientSecret, 'TASKHOOK_OAUTH_GOOGLE');
  const github = clientPair(c.oauthGithubClientId, c.oauthGithubClientSecret, 'TASKHOOK_OAUTH_GITHUB');
  return {
    google: google && { ...google, issuer: c.oauthGoogleIssuer },
    github: github && { ...github, baseUrl: c.oauthGithubBaseUrl, apiUrl: c.oauthGithubApiUrl },
    redirectUrl: c.oauthRedirectUrl,
    stateTtlSeconds: c.oauthStateTtlSeconds,
  };
}

/**
 * Validates a complete config object (also used by tests that build one directly).
 * @throws ConfigError naming the variable of the first invalid setting.
 */
export function validateConfig(config: Config): Config {
  const clean = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
  const first = Value.Errors(ConfigSchema, clean).First();
  if (first) {
    const key = first.path.split('/')[1] ?? '';
    const name = key in SETTINGS ? SETTINGS[key as SettingKey].env : key;
    throw new ConfigError(`Invalid configuration: ${name} ${first.message}`);
  }
  return config;
}

/** The README's configuration table, rendered from SETTINGS (a test keeps the README in step). */
export function renderConfigTable(): string {
  const rows = settingEntries().map(([, s]) => {
    const shown = Array.isArray(s.default) ? s.default.join(',') : String(s.default);
    const fallback = s.defaultText ?? (s.default === undefined ? 'unset' : `\`${shown}\``);
    return `| \`${s.env}\` | ${fallback} | ${s.doc} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}
