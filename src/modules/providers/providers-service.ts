import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../lib/outbound.js';
import type { Acting } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { recordAudit } from '../audit/audit-repo.js';
import { apiKeyHint, DEFAULT_BASE_URL, normaliseBaseUrl } from './providers-fns.js';
import type { CredentialRow, ProvidersRepo } from './providers-repo.js';
import {
  type CreateCredentialInput,
  type CredentialView,
  MAX_CREDENTIALS_PER_WORKSPACE,
  type PatchCredentialInput,
} from './providers-schemas.js';

/** `last_used_at` is written at most this often per credential. */
const TOUCH_INTERVAL_MS = 60_000;

/** A credential ready for an upstream call: the key opened, never leaving the server. */
export interface OpenedCredential {
  uuid: string;
  /** The workspace it belongs to: its upstream calls go out in that workspace's lane. */
  workspaceUuid: string;
  name: string;
  baseUrl: string;
  apiKey: string;
  /** Changes with every edit: part of the response cache's key, so an edit makes old entries unreachable. */
  updatedAt: string;
}

const duplicateName = () => invalid('name', 'is already used by another of your provider credentials');

/**
 * Provider credentials (a workspace's keys for OpenAI-compatible servers), sealed at rest. Every
 * change is audited in its own transaction, naming at most the field `api_key`, never its value.
 */
export function createProvidersService(deps: {
  db: Db;
  repo: ProvidersRepo;
  box: SecretBox;
  clock: Clock;
  outbound: OutboundPolicy;
  /**
   * Names of the workspace's fallback routes that have this credential as a target (the model
   * proxy's, given by the app: that room sits above this one). A credential in use is not deleted.
   */
  routesNaming: (ex: Executor, workspaceUuid: string, credentialUuid: string) => Promise<string[]>;
  /** Names of the workspace's live agents whose runtime uses this credential (given by the app). */
  agentsUsing: (ex: Executor, workspaceUuid: string, credentialUuid: string) => Promise<string[]>;
}) {
  const { db, repo } = deps;
  const now = () => iso(deps.clock.now());
  const lastTouched = new Map<string, number>();

  const view = (c: CredentialRow): CredentialView => ({
    uuid: c.uuid,
    name: c.name,
    provider: c.provider,
    base_url: c.baseUrl,
    api_key_hint: c.apiKeyHint,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
    last_used_at: c.lastUsedAt,
  });

  /** The normalised base URL, refused with a 400 naming `base_url` when malformed or private. */
  async function checkBaseUrl(raw: string): Promise<string> {
    const form = normaliseBaseUrl(raw);
    if (!form.ok) throw invalid('base_url', form.reason);
    try {
      await checkOutboundUrl(form.url, deps.outbound);
    } catch (err) {
      if (err instanceof OutboundUrlError) throw invalid('base_url', err.message);
      throw err;
    }
    return form.url;
  }

  async function requireOwned(workspaceUuid: string, uuid: string, ex: Executor = db.kysely) {
    const found = await repo.findOwned(ex, workspaceUuid, uuid);
    if (!found) throw notFound('Provider credential');
    return found;
  }

  const open = (c: CredentialRow): OpenedCredential => ({
    uuid: c.uuid,
    workspaceUuid: c.workspaceUuid,
    name: c.name,
    baseUrl: c.baseUrl,
    apiKey: deps.box.open(c.apiKeySealed),
    updatedAt: c.updatedAt,
  });

  return {
    async create(acting: Acting, input: CreateCredentialInput): Promise<CredentialView> {
      const { workspaceUuid } = acting;
      const baseUrl = await checkBaseUrl(input.base_url ?? DEFAULT_BASE_URL);
      const at = now();
      const row: CredentialRow = {
        uuid: newId(),
        workspaceUuid,
        name: input.name,
        provider: input.provider,
        baseUrl,
        apiKeySealed: deps.box.seal(input.api_key),
        apiKeyHint: apiKeyHint(input.api_key),
        createdAt: at,
        updatedAt: at,
        lastUsedAt: null,
      };
      try {
        await db.transaction(async (trx) => {
          if (db.dialect === 'postgres') await repo.lockOwner(trx, workspaceUuid);
          if ((await repo.count(trx, workspaceUuid)) >= MAX_CREDENTIALS_PER_WORKSPACE) {
            throw invalid('provider_credentials', `at most ${MAX_CREDENTIALS_PER_WORKSPACE} per workspace`);
          }
          await repo.insert(trx, row);
          await recordAudit(trx, acting, {
            action: 'provider_credential.create',
            target: { type: 'provider_credential', uuid: row.uuid },
            details: { name: row.name },
          });
        });
      } catch (err) {
        if (err instanceof UniqueViolationError) throw duplicateName();
        throw err;
      }
      return view(row);
    },

    list: async (workspaceUuid: string) => (await repo.list(db.kysely, workspaceUuid)).map(view),

    get: async (workspaceUuid: string, uuid: string) => view(await requireOwned(workspaceUuid, uuid)),

    /**
     * Audited as `provider_credential.update` naming the fields the request changed: `name` and
     * `base_url` when their value differs, `api_key` whenever one is sent (a sealed key cannot be
     * compared without opening it, and a resent key is still a key change to account for).
     */
    async patch(acting: Acting, uuid: string, input: PatchCredentialInput): Promise<CredentialView> {
      const baseUrl = input.base_url === undefined ? undefined : await checkBaseUrl(input.base_url);
      try {
        return await db.transaction(async (trx) => {
          const current = await requireOwned(acting.workspaceUuid, uuid, trx);
          const next: CredentialRow = {
            ...current,
            name: input.name ?? current.name,
            baseUrl: baseUrl ?? current.baseUrl,
            ...(input.api_key === undefined
              ? {}
              : { apiKeySealed: deps.box.seal(input.api_key), apiKeyHint: apiKeyHint(input.api_key) }),
            updatedAt: now(),
          };
          await repo.update(trx, next);
          const fields = [
            ...(next.name !== current.name ? ['name'] : []),
            ...(input.api_key !== undefined ? ['api_key'] : []),
            ...(next.baseUrl !== current.baseUrl ? ['base_url'] : []),
          ];
          if (fields.length > 0) {
            await recordAudit(trx, acting, {
              action: 'provider_credential.update',
              target: { type: 'provider_credential', uuid },
              details: { fields },
            });
          }
          return view(next);
        });
      } catch (err) {
        if (err instanceof UniqueViolationError) throw duplicateName();
        throw err;
      }
    },

    /**
     * Deletes a credential; its call records stay.
     * @throws AppError NOT_FOUND, or CREDENTIAL_IN_USE while an agent's runtime names it.
     */
    async remove(acting: Acting, uuid: string) {
      const { workspaceUuid } = acting;
      await db.transaction(async (trx) => {
        const { name } = await requireOwned(workspaceUuid, uuid, trx);
        const agents = await deps.agentsUsing(trx, workspaceUuid, uuid);
        if (agents.length > 0) {
          throw new AppError(
            'CREDENTIAL_IN_USE',
            `The credential is used by agent ${agents.map((a) => JSON.stringify(a)).join(', ')}; change their runtime first`,
          );
        }
        const routes = await deps.routesNaming(trx, workspaceUuid, uuid);
        if (routes.length > 0) {
          throw new AppError(
            'CREDENTIAL_IN_USE',
            `The credential is a target of route ${routes.map((r) => JSON.stringify(r)).join(', ')}; change the route first`,
          );
        }
        await repo.remove(trx, uuid);
        await recordAudit(trx, acting, {
          action: 'provider_credential.delete',
          target: { type: 'provider_credential', uuid },
          details: { name },
        });
      });
    },

    /** The credential with this uuid or name among the workspace's, opened; undefined when none. */
    async resolve(workspaceUuid: string, uuidOrName: string): Promise<OpenedCredential | undefined> {
      const byUuid = /^[0-9a-f-]{36}$/i.test(uuidOrName)
        ? await repo.findOwned(db.kysely, workspaceUuid, uuidOrName)
        : undefined;
      const found = byUuid ?? (await repo.findByName(db.kysely, workspaceUuid, uuidOrName));
      return found && open(found);
    },

    /** Every credential of the user, opened (for the model list). */
    openAll: async (workspaceUuid: string) => (await repo.list(db.kysely, workspaceUuid)).map(open),

    /** Records a use, at most once a minute per credential (per instance); never fails the caller. */
    async touch(uuid: string, log: (err: unknown) => void) {
      const nowMs = deps.clock.now();
      const last = lastTouched.get(uuid);
      if (last !== undefined && nowMs - last < TOUCH_INTERVAL_MS) return;
      lastTouched.set(uuid, nowMs);
      if (lastTouched.size > 10_000) lastTouched.clear();
      await db.transaction((trx) => repo.touch(trx, uuid, iso(nowMs))).catch(log);
    },
  };
}

export type ProvidersService = ReturnType<typeof createProvidersService>;
