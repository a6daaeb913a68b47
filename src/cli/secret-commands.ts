// `taskhook secret generate|export|reseal`: the operator's tools for the JWT secret and the
// encryption key (PostgreSQL mode keeps neither in the database).
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { createSecretBox, randomSecret } from '../lib/crypto.js';
import { deleteStoredSecrets, exportLines, readSecretsFile, readStoredSecrets } from '../lib/secrets.js';
import { createLogger, openDb, openProcessDeps } from '../process-deps.js';
import { resealAll } from './reseal.js';

/** Prints the stored secrets as `KEY=value` lines; with `--delete`, removes them from PostgreSQL. */
async function exportSecrets(opts: { delete: boolean }): Promise<void> {
  const config = { ...loadConfig(), logLevel: 'warn' as const };
  if (!config.databaseUrl) {
    if (opts.delete) throw new Error('--delete applies to PostgreSQL only: embedded mode keeps its secrets file');
    process.stdout.write(exportLines(readSecretsFile(config.dataDir)));
    return;
  }
  // No migration and no secret resolution: this must work on a database the server refuses.
  const db = openDb(config, createLogger(config));
  try {
    const stored = await readStoredSecrets(db);
    process.stdout.write(exportLines(stored));
    if (opts.delete) await deleteStoredSecrets(db);
  } finally {
    await db.close();
  }
}

/** Re-seals every stored secret under TASKHOOK_ENCRYPTION_KEY. @throws Error when some stay unreadable */
async function resealSecrets(): Promise<void> {
  const config = loadConfig();
  const runtime = await openProcessDeps({ ...config, logLevel: 'warn' });
  try {
    const box = createSecretBox(runtime.secrets.encryptionKey, runtime.secrets.previousEncryptionKeys);
    const result = await resealAll(runtime.db, box);
    if (result.unreadable > 0) {
      throw new Error(
        `${result.unreadable} stored values could not be opened by any configured key (${result.resealed} re-sealed): ` +
          'add the key that sealed them to TASKHOOK_ENCRYPTION_KEY_PREVIOUS and run it again',
      );
    }
    process.stdout.write(`${JSON.stringify({ resealed: result.resealed })}\n`);
  } finally {
    await runtime.close();
  }
}

/** Adds the `secret` command group to the CLI. */
export function addSecretCommands(program: Command): void {
  const secret = program.command('secret').description('the JWT secret and the encryption key');
  secret
    .command('generate')
    .description('print a fresh random value for TASKHOOK_JWT_SECRET or TASKHOOK_ENCRYPTION_KEY')
    .action(() => {
      process.stdout.write(`${randomSecret(48)}\n`);
    });
  secret
    .command('export')
    .description('print secrets kept by an earlier version as KEY=value lines (PostgreSQL: from the database)')
    .option('--delete', 'then delete them from the database', false)
    .action((opts: { delete: boolean }) => exportSecrets(opts));
  secret
    .command('reseal')
    .description('re-seal every stored secret under TASKHOOK_ENCRYPTION_KEY; prints how many changed')
    .action(() => resealSecrets());
}
