import type { Selectable } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { ProviderCredentialsTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';

export interface CredentialRow {
  uuid: string;
  workspaceUuid: string;
  name: string;
  provider: 'openai';
  baseUrl: string;
  apiKeySealed: string;
  apiKeyHint: string;
  createdAt: string;
  updatedAt: string;
  lastUsedAt: string | null;
}

function toRow(r: Selectable<ProviderCredentialsTable>): CredentialRow {
  return {
    uuid: r.uuid,
    workspaceUuid: r.workspace_uuid,
    name: r.name,
    provider: r.provider as 'openai',
    baseUrl: r.base_url,
    apiKeySealed: r.api_key_sealed,
    apiKeyHint: r.api_key_hint,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastUsedAt: r.last_used_at,
  };
}

/** The only code that touches the provider_credentials table. */
export const providersRepo = {
  insert(ex: Executor, c: CredentialRow) {
    return withDbErrors(
      ex
        .insertInto('provider_credentials')
        .values({
          uuid: c.uuid,
          workspace_uuid: c.workspaceUuid,
          name: c.name,
          provider: c.provider,
          base_url: c.baseUrl,
          api_key_sealed: c.apiKeySealed,
          api_key_hint: c.apiKeyHint,
          created_at: c.createdAt,
          updated_at: c.updatedAt,
          last_used_at: c.lastUsedAt,
        })
        .execute(),
    );
  },

  update(ex: Executor, c: CredentialRow) {
    return withDbErrors(
      ex
        .updateTable('provider_credentials')
        .set({
          name: c.name,
          base_url: c.baseUrl,
          api_key_sealed: c.apiKeySealed,
          api_key_hint: c.apiKeyHint,
          updated_at: c.updatedAt,
        })
        .where('uuid', '=', c.uuid)
        .execute(),
    );
  },

  async findOwned(ex: Executor, workspaceUuid: string, uuid: string): Promise<CredentialRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('provider_credentials')
        .selectAll()
        .where('uuid', '=', uuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    return row && toRow(row);
  },

  async findByName(ex: Executor, workspaceUuid: string, name: string): Promise<CredentialRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('provider_credentials')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where('name', '=', name)
        .executeTakeFirst(),
    );
    return row && toRow(row);
  },

  async list(ex: Executor, workspaceUuid: string): Promise<CredentialRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('provider_credentials')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .execute(),
    );
    return rows.map(toRow);
  },

  async count(ex: Executor, workspaceUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('provider_credentials')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** PostgreSQL: serialises a user's creates, so the count and the insert are one step. */
  async lockOwner(ex: Executor, workspaceUuid: string) {
    await withDbErrors(ex.selectFrom('users').select('uuid').where('uuid', '=', workspaceUuid).forUpdate().execute());
  },

  async remove(ex: Executor, uuid: string) {
    await withDbErrors(ex.deleteFrom('provider_credentials').where('uuid', '=', uuid).execute());
  },

  touch(ex: Executor, uuid: string, at: string) {
    return withDbErrors(
      ex.updateTable('provider_credentials').set({ last_used_at: at }).where('uuid', '=', uuid).execute(),
    );
  },
};

export type ProvidersRepo = typeof providersRepo;
