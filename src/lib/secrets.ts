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
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { randomSecret } from './crypto.js';

export interface ServiceSecrets {
  jwtSecret: string;
  encryptionKey: string;
}

const NAMES = { jwtSecret: 'jwt_secret', encryptionKey: 'encryption_key' } as const;

/**
 * The JWT secret and encryption key: from the environment when set, else generated once and
 * kept (embedded mode: a 0600 JSON file in the data dir; PostgreSQL: a settings row, so every
 * instance agrees).
 */
export async function resolveSecrets(config: Config, db: Db): Promise<ServiceSecrets> {
  const wanted = (Object.keys(NAMES) as Array<keyof ServiceSecrets>).filter((k) => !config[k]);
  const stored =
    wanted.length === 0
      ? {}
      : db.dialect === 'postgres'
        ? await fromSettings(db, wanted)
        : fromFile(config.dataDir, wanted);
  return {
    jwtSecret: config.jwtSecret ?? (stored.jwtSecret as string),
    encryptionKey: config.encryptionKey ?? (stored.encryptionKey as string),
  };
}

async function fromSettings(db: Db, wanted: Array<keyof ServiceSecrets>): Promise<Partial<ServiceSecrets>> {
  const out: Partial<ServiceSecrets> = {};
  for (const name of wanted) {
    const key = NAMES[name];
    await db.kysely
      .insertInto('settings')
      .values({ key, value: randomSecret(48) })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await db.kysely.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirstOrThrow();
    out[name] = row.value;
  }
  return out;
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

function fromFile(dataDir: string, wanted: Array<keyof ServiceSecrets>): Partial<ServiceSecrets> {
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
    mkdirSync(dataDir, { recursive: true });
    const text = `${JSON.stringify(current, null, 2)}\n`;
    // Of two processes starting at once on a new data dir, one creates the file and the other
    // reads what it wrote, so both use the same secrets.
    if (!writeDurably(file, text, !existsSync(file))) return fromFile(dataDir, wanted);
  }
  return Object.fromEntries(wanted.map((n) => [n, current[NAMES[n]]]));
}
