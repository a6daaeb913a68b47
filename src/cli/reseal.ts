// Re-sealing every stored secret under the current encryption key (`taskhook secret reseal`).
import { sql } from 'kysely';
import type { Db } from '../db/connect.js';
import { SealedSecretError, type SecretBox } from '../lib/crypto.js';
import { agentsRepo } from '../modules/agents/agents-repo.js';

/**
 * Every column that holds a sealed value, by table (each keyed by `uuid`). Agents' header values
 * live inside their runtime JSON and are handled apart. A new sealed column must be added here.
 */
const SEALED_COLUMNS: ReadonlyArray<{ table: string; columns: readonly string[] }> = [
  { table: 'signing_secrets', columns: ['secret_sealed'] },
  { table: 'triggers', columns: ['secret_sealed', 'previous_secret_sealed'] },
  { table: 'provider_credentials', columns: ['api_key_sealed'] },
  { table: 'a2a_push_configs', columns: ['token', 'auth_credentials'] },
  { table: 'callbacks', columns: ['secret_headers'] },
];

const PAGE = 500;

export interface ResealResult {
  resealed: number;
  /** Values that no configured key opens: left as they are. */
  unreadable: number;
}

/** A value under the current key, or null when it already is; counts what no key opens. */
function resealOne(box: SecretBox, sealed: string, result: ResealResult): string | null {
  if (box.isCurrent(sealed)) return null;
  try {
    return box.seal(box.open(sealed));
  } catch (err) {
    if (!(err instanceof SealedSecretError)) throw err;
    result.unreadable += 1;
    return null;
  }
}

async function resealColumn(db: Db, box: SecretBox, table: string, column: string, result: ResealResult) {
  let after = '';
  for (;;) {
    const { rows } = await sql<{ uuid: string; value: string | null }>`
      select uuid, ${sql.ref(column)} as value from ${sql.table(table)}
      where uuid > ${after} order by uuid limit ${PAGE}`.execute(db.kysely);
    for (const row of rows) {
      const next = row.value === null ? null : resealOne(box, row.value, result);
      if (next === null) continue;
      // Only if nobody changed it meanwhile (a rotation by its owner seals under the current key anyway).
      const done = await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${next}
        where uuid = ${row.uuid} and ${sql.ref(column)} = ${row.value}`.execute(db.kysely);
      result.resealed += Number(done.numAffectedRows ?? 0n);
    }
    const last = rows.at(-1);
    if (!last || rows.length < PAGE) return;
    after = last.uuid;
  }
}

type HeaderRuntime = { type: string; headers?: Record<string, string> };

async function resealAgentHeaders(db: Db, box: SecretBox, result: ResealResult) {
  for (const row of await agentsRepo.allRuntimes(db.kysely)) {
    const runtime = row.runtime as HeaderRuntime | null;
    if (!runtime?.headers) continue;
    let changed = 0;
    const headers: Record<string, string> = {};
    for (const [name, sealed] of Object.entries(runtime.headers)) {
      const next = resealOne(box, sealed, result);
      headers[name] = next ?? sealed;
      if (next !== null) changed += 1;
    }
    if (changed === 0) continue;
    await agentsRepo.replaceRuntime(db.kysely, row.uuid, { ...runtime, headers });
    result.resealed += changed;
  }
}

/**
 * Re-seals every stored secret that is not sealed with the current key (values sealed with a key of
 * TASKHOOK_ENCRYPTION_KEY_PREVIOUS, or before key ids existed). Values that no key opens are counted
 * and left alone.
 */
export async function resealAll(db: Db, box: SecretBox): Promise<ResealResult> {
  const result: ResealResult = { resealed: 0, unreadable: 0 };
  for (const { table, columns } of SEALED_COLUMNS) {
    for (const column of columns) await resealColumn(db, box, table, column, result);
  }
  await resealAgentHeaders(db, box, result);
  return result;
}
