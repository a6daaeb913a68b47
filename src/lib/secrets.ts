import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { type Config, ConfigError } from '../config.js';
import type { Db } from '../db/connect.js';
import { randomSecret } from './crypto.js';

export interface ServiceSecrets {
  jwtSecret: string;
  encryptionKey: string;
  /** Earlier encryption keys that may still open stored values (TASKHOOK_ENCRYPTION_KEY_PREVIOUS). */
  previousEncryptionKeys: string[];
}

type SecretName = 'jwtSecret' | 'encryptionKey';

const NAMES = { jwtSecret: 'jwt_secret', encryptionKey: 'encryption_key' } as const;
const ENV = { jwtSecret: 'TASKHOOK_JWT_SECRET', encryptionKey: 'TASKHOOK_ENCRYPTION_KEY' } as const;
const SECRET_NAMES = Object.keys(NAMES) as SecretName[];

/** Secrets the operator must supply, missing or moved, explained; the message names the variable. */
export class SecretsError extends ConfigError {}

/** Reads one file-held secret; a trailing newline is ignored. @throws SecretsError */
function readSecretFile(file: string, name: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SecretsError(`${name}_FILE names ${file}, which cannot be read (${(err as NodeJS.ErrnoException).code})`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value.length < 32) throw new SecretsError(`${name}_FILE must hold at least 32 characters`);
  return value;
}

/** The secrets the operator configured: the variable, or the file its `_FILE` variable names. */
export function configuredSecrets(config: Config): Partial<Record<SecretName, string>> {
  const out: Partial<Record<SecretName, string>> = {};
  for (const name of SECRET_NAMES) {
    const direct = config[name];
    const file = config[`${name}File` as const];
    if (direct !== undefined && file !== undefined) {
      throw new SecretsError(`Set ${ENV[name]} or ${ENV[name]}_FILE, not both`);
    }
    const value = file !== undefined ? readSecretFile(file, ENV[name]) : direct;
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * The JWT secret and encryption keys. Embedded mode: from the environment when set, else generated
 * once and kept in a 0600 file in the data dir. PostgreSQL mode: from the environment only (never
 * stored in the database); rows left by an earlier version that kept them there are moved out.
 * @throws SecretsError naming the variable that is missing, or the rows still to move
 */
export async function resolveSecrets(config: Config, db: Pick<Db, 'dialect' | 'kysely'>): Promise<ServiceSecrets> {
  const given = configuredSecrets(config);
  const previousEncryptionKeys = config.encryptionKeyPrevious ?? [];
  if (db.dialect === 'postgres') {
    await moveOutStored(db, given, previousEncryptionKeys);
    const missing = SECRET_NAMES.find((n) => given[n] === undefined);
    if (missing) {
      throw new SecretsError(
        `${ENV[missing]} (or ${ENV[missing]}_FILE) is required with DATABASE_URL: secrets are never kept in PostgreSQL. ` +
          '`taskhook secret generate` prints a fresh random value; every instance must use the same one.',
      );
    }
    return { ...(given as Record<SecretName, string>), previousEncryptionKeys };
  }
  const wanted = SECRET_NAMES.filter((n) => given[n] === undefined);
  const stored = wanted.length === 0 ? {} : fromFile(config.dataDir, wanted);
  return { ...stored, ...given, previousEncryptionKeys } as ServiceSecrets;
}

/** The secrets an earlier version generated into PostgreSQL's settings table, if any are left. */
export async function readStoredSecrets(db: Pick<Db, 'kysely'>): Promise<Partial<Record<SecretName, string>>> {
  const rows = await db.kysely
    .selectFrom('settings')
    .select(['key', 'value'])
    .where('key', 'in', Object.values(NAMES))
    .execute();
  const out: Partial<Record<SecretName, string>> = {};
  for (const name of SECRET_NAMES) {
    const row = rows.find((r) => r.key === NAMES[name]);
    if (row) out[name] = row.value;
  }
  return out;
}

/** Deletes the secrets an earlier version kept in the settings table. */
export async function deleteStoredSecrets(db: Pick<Db, 'kysely'>): Promise<void> {
  await db.kysely.deleteFrom('settings').where('key', 'in', Object.values(NAMES)).execute();
}

/** `KEY=value` lines of the stored secrets, for an operator moving them into the environment. */
export function exportLines(stored: Partial<Record<SecretName, string>>): string {
  return SECRET_NAMES.filter((n) => stored[n] !== undefined)
    .map((n) => `${ENV[n]}=${stored[n]}\n`)
    .join('');
}

/**
 * Rows left by an earlier version: deleted when the environment holds the same values (an old
 * encryption key may also sit in the previous keys); otherwise the start is refused, since
 * dropping them would lose what they open.
 */
async function moveOutStored(
  db: Pick<Db, 'kysely'>,
  given: Partial<Record<SecretName, string>>,
  previousKeys: readonly string[],
): Promise<void> {
  const stored = await readStoredSecrets(db);
  const names = SECRET_NAMES.filter((n) => stored[n] !== undefined);
  if (names.length === 0) return;
  for (const name of names) {
    const known =
      given[name] === stored[name] || (name === 'encryptionKey' && previousKeys.includes(stored[name] ?? ''));
    if (known) continue;
    const why = given[name] === undefined ? 'and it is not set' : 'which differs from the configured value';
    throw new SecretsError(
      `The database still holds ${ENV[name]} generated by an earlier version, ${why}. Secrets no longer live in ` +
        'PostgreSQL: run `taskhook secret export` to print them as KEY=value lines, put those in the environment ' +
        '(or in *_FILE files), then remove them from the database with `taskhook secret export --delete`.',
    );
  }
  await deleteStoredSecrets(db);
}

/**
 * Writes the whole file or nothing (a temporary file, fsynced, then linked or renamed into place,
 * then the directory fsynced), mode 0600. With `exclusive`, returns false when the file appeared
 * meanwhile.
 */
function writeDurably(file: string, text: string, exclusive: boolean): boolean {
  const tmp = `${file}.${process.pid}.${randomSecret(6)}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (exclusive) linkSync(tmp, file);
    else renameSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    if (exclusive) rmSync(tmp, { force: true });
  }
  const dir = openSync(path.dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return true;
}

/** The secrets kept in the data dir's file (embedded mode), without generating any. */
export function readSecretsFile(dataDir: string): Partial<Record<SecretName, string>> {
  const file = path.join(dataDir, 'secrets.json');
  const current: Record<string, unknown> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const out: Partial<Record<SecretName, string>> = {};
  for (const name of SECRET_NAMES) {
    const value = current[NAMES[name]];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

function fromFile(dataDir: string, wanted: SecretName[]): Partial<Record<SecretName, string>> {
  const file = path.join(dataDir, 'secrets.json');
  const current: Record<string, string> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  let changed = false;
  for (const name of wanted) {
    if (typeof current[NAMES[name]] !== 'string') {
      current[NAMES[name]] = randomSecret(48);
      changed = true;
    }
  }
  if (changed) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const text = `${JSON.stringify(current, null, 2)}\n`;
    // Of two processes starting at once on a new data dir, one creates the file and the other
    // reads what it wrote, so both use the same secrets.
    if (!writeDurably(file, text, !existsSync(file))) return fromFile(dataDir, wanted);
  }
  return Object.fromEntries(wanted.map((n) => [n, current[NAMES[n]]]));
}
