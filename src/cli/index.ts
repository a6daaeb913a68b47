#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { createSecretBox } from '../lib/crypto.js';
import { isUuid } from '../lib/ids.js';
import type { KeyRole } from '../lib/principal.js';
import { createAccountsModule } from '../modules/accounts/accounts-module.js';
import type { AccountsService } from '../modules/accounts/accounts-service.js';
import { createLogger, openDb, openProcessDeps } from '../process-deps.js';
import { failureMessage } from './failure.js';
import { addSecretCommands } from './secret-commands.js';

function print(value: unknown) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function fail(message: string): never {
  process.stderr.write(`taskhook: ${message}\n`);
  process.exit(1);
}

function nonEmpty(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

function workspaceUuid(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError('must be a workspace uuid');
  return value.toLowerCase();
}

function keyRole(value: string): KeyRole {
  if (value !== 'admin' && value !== 'member' && value !== 'viewer') {
    throw new InvalidArgumentError('must be admin, member or viewer');
  }
  return value;
}

/** Runs `work` with an accounts service over the configured storage, then closes it. */
async function withAccounts<T>(work: (accounts: AccountsService) => Promise<T>) {
  const config = loadConfig();
  const runtime = await openProcessDeps({ ...config, logLevel: 'warn' });
  try {
    const box = createSecretBox(runtime.secrets.encryptionKey, runtime.secrets.previousEncryptionKeys);
    print(await work(createAccountsModule({ config, runtime, box }).service));
  } finally {
    await runtime.close();
  }
}

const program = new Command('taskhook')
  .description('taskhook: put AI agents to work over plain HTTP')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

program
  .command('serve')
  .description('run migrations and serve the API (PORT, HOST, DATABASE_URL, ...)')
  .action(async () => {
    // Loaded here: the other commands start faster without the whole HTTP application.
    const { startServer } = await import('../server.js');
    const app = await startServer(loadConfig());
    if (!app) return;
    const address = app.addresses()[0];
    app.log.info({ address, docs: `${loadConfig().publicUrl}/docs` }, 'taskhook is serving');
  });

program
  .command('migrate')
  .description('bring the database schema up to date')
  .action(async () => {
    // Only the schema: secrets live in it (PostgreSQL), so nothing else may run before it exists.
    const config = { ...loadConfig(), logLevel: 'warn' as const };
    const db = openDb(config, createLogger(config));
    try {
      print({ applied: await migrateToLatest(db) });
    } finally {
      await db.close();
    }
  });

const user = program.command('user').description('manage user accounts');
user
  .command('create')
  .description('create a user')
  .requiredOption('--email <email>', 'e-mail address', nonEmpty)
  .requiredOption('--password <password>', 'password (at least 8 characters)', nonEmpty)
  .option('--verified', 'mark the e-mail as verified', false)
  .option('--agents-disabled', 'create the account without the AI agents feature', false)
  .action((opts: { email: string; password: string; verified: boolean; agentsDisabled: boolean }) =>
    withAccounts(async (accounts) => {
      const created = await accounts.createUser({
        email: opts.email,
        password: opts.password,
        verified: opts.verified,
        agentsEnabled: !opts.agentsDisabled,
      });
      return { uuid: created.uuid, email: created.email };
    }),
  );
user
  .command('verify')
  .description("mark a user's e-mail as verified")
  .requiredOption('--email <email>', 'e-mail address', nonEmpty)
  .action((opts: { email: string }) => withAccounts((accounts) => accounts.verifyByEmail(opts.email)));
user
  .command('set-password')
  .description("set a user's password (their session tokens stop working)")
  .requiredOption('--email <email>', 'e-mail address', nonEmpty)
  .requiredOption('--password <password>', 'new password (at least 8 characters)', nonEmpty)
  .action((opts: { email: string; password: string }) =>
    withAccounts((accounts) => accounts.setPasswordByEmail(opts.email, opts.password)),
  );

for (const [name, description, run] of [
  ['disable', 'disable a user: every session, key and token stops working, and login is refused', 'disableByEmail'],
  ['enable', 'enable a disabled user again', 'enableByEmail'],
  ['delete', 'delete a user and everything they own', 'deleteByEmail'],
] as const) {
  user
    .command(name)
    .description(description)
    .requiredOption('--email <email>', 'e-mail address', nonEmpty)
    .action((opts: { email: string }) => withAccounts<unknown>((accounts) => accounts[run](opts.email)));
}

program
  .command('key')
  .description('manage platform API keys')
  .command('create')
  .description('create a platform API key made by a user, in a workspace they administer; the key is printed once')
  .requiredOption('--email <email>', "the creator's e-mail address", nonEmpty)
  .requiredOption('--name <name>', 'a name for the key', nonEmpty)
  .option('--workspace <uuid>', "the workspace (default: the user's personal workspace)", workspaceUuid)
  .option('--role <role>', 'admin, member or viewer (default: admin)', keyRole)
  .option('--models <patterns>', 'comma-separated models the key may call, e.g. openai/*,route:chat (default: all)')
  .action((opts: { email: string; name: string; workspace?: string; role?: KeyRole; models?: string }) =>
    withAccounts((accounts) =>
      accounts.createPlatformKeyByEmail(opts.email, opts.name, {
        workspaceUuid: opts.workspace,
        role: opts.role,
        models: opts.models === undefined ? null : opts.models.split(','),
      }),
    ),
  );

addSecretCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  if (err instanceof ConfigError) fail(err.message);
  fail(failureMessage(err));
}
