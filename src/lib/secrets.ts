import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
    try {
      // A new file is created exclusively: of two processes starting at once, one writes and
      // the other reads what it wrote, so both use the same secrets.
      writeFileSync(file, text, { mode: 0o600, flag: existsSync(file) ? 'w' : 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return fromFile(dataDir, wanted);
    }
    chmodSync(file, 0o600);
  }
  return Object.fromEntries(wanted.map((n) => [n, current[NAMES[n]]]));
}
