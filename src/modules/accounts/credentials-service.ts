import type { Db } from '../../db/connect.js';
import { AppError, notFound } from '../../http/errors.js';
import { requirePlainName } from '../../http/names.js';
import { type SecretBox, sha256Hex } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { type Acting, type KeyRole, roleAtLeast } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { recordAudit } from '../audit/audit-repo.js';
import {
  generateIngestToken,
  generatePlatformKey,
  ingestTokenPrefix,
  newSigningSecret,
  platformKeyPrefix,
} from './accounts-fns.js';
import type { AccountsRepo, CredentialRow, CredentialTable, UserRow } from './accounts-repo.js';
import { checkModelPatterns } from './key-models-fns.js';
import { membershipsRepo } from './memberships-repo.js';

const DAY_MS = 24 * 60 * 60 * 1000;

const credentialView = (row: CredentialRow) => ({
  uuid: row.uuid,
  prefix: row.prefix,
  created_at: row.createdAt,
  last_used_at: row.lastUsedAt,
  revoked_at: row.revokedAt,
  workspace_uuid: row.workspaceUuid,
  created_by: row.createdBy,
});

/** A platform key as its list shows it. */
const keyView = (r: CredentialRow) => ({
  ...credentialView(r),
  name: r.name ?? '',
  role: (r.role ?? 'admin') as KeyRole,
  models: r.models,
});

/**
 * Platform keys, ingest tokens and the callback signing secret of a workspace. Every change is
 * written to the workspace's audit log in its own transaction.
 */
export function createCredentialsService(deps: {
  db: Db;
  repo: AccountsRepo;
  box: SecretBox;
  clock: Clock;
  userByEmail: (email: string) => Promise<UserRow>;
  /** Called after a commit that may void the user's credentials (this instance's cache). */
  onCredentialsChanged?: (userUuid: string) => void;
}) {
  const { db, repo, clock } = deps;
  const now = () => iso(clock.now());

  async function issue(
    table: CredentialTable,
    acting: Acting,
    createdBy: string,
    name?: string,
    role?: KeyRole,
    models: string[] | null = null,
  ) {
    const secret = table === 'platform_keys' ? generatePlatformKey() : generateIngestToken();
    const row = {
      uuid: newId(),
      workspaceUuid: acting.workspaceUuid,
      createdBy,
      name,
      role,
      models,
      hash: sha256Hex(secret),
      prefix: table === 'platform_keys' ? platformKeyPrefix(secret) : ingestTokenPrefix(secret),
      createdAt: now(),
    };
    await db.transaction(async (trx) => {
      await repo.insertCredential(trx, table, row);
      await recordAudit(
        trx,
        acting,
        table === 'platform_keys'
          ? { action: 'key.create', target: { type: 'key', uuid: row.uuid }, details: { name, role } }
          : { action: 'ingest_token.create', target: { type: 'ingest_token', uuid: row.uuid }, details: {} },
      );
    });
    return { uuid: row.uuid, secret, created_at: row.createdAt, workspace_uuid: acting.workspaceUuid };
  }

  async function revoke(table: CredentialTable, acting: Acting, uuid: string, what: string) {
    const outcome = await db.transaction(async (trx) => {
      const found = await repo.revokeCredential(trx, table, acting.workspaceUuid, uuid, now());
      if (found?.revokedNow) {
        await recordAudit(
          trx,
          acting,
          table === 'platform_keys'
            ? { action: 'key.revoke', target: { type: 'key', uuid }, details: { name: found.name } }
            : { action: 'ingest_token.revoke', target: { type: 'ingest_token', uuid }, details: {} },
        );
      }
      return found;
    });
    if (!outcome) throw notFound(what);
    if (outcome.createdBy) deps.onCredentialsChanged?.(outcome.createdBy);
  }

  async function signingSecrets(workspaceUuid: string) {
    const rows = await repo.listSigningSecrets(db.kysely, workspaceUuid, now());
    return rows.map((r) => ({ secret: deps.box.open(r.secret_sealed), created_at: r.created_at, uuid: r.uuid }));
  }

  return {
    /**
     * A key of the acting workspace, made by `createdBy` with `role` (default admin) and a model
     * allowlist (default null: every model).
     * @throws AppError 400 INVALID_REQUEST for a bad name or allowlist pattern.
     */
    async createPlatformKey(
      acting: Acting,
      createdBy: string,
      name: string,
      role: KeyRole = 'admin',
      models: readonly unknown[] | null = null,
    ) {
      requirePlainName(name);
      const allowlist = checkModelPatterns(models);
      const issued = await issue('platform_keys', acting, createdBy, name, role, allowlist);
      const { uuid, secret, created_at, workspace_uuid } = issued;
      return { uuid, name, key: secret, created_at, role, workspace_uuid, models: allowlist };
    },

    /**
     * Renames a key of the acting workspace and/or replaces its model allowlist (revoked keys too);
     * audited as key.update with the fields changed. The change is announced with the write, so
     * this instance serves it from the next request on and others within the credential cache's
     * lifetime.
     * @throws AppError 404 NOT_FOUND when the key is not the workspace's; 400 for a bad field.
     */
    async updatePlatformKey(
      acting: Acting,
      uuid: string,
      patch: { name?: string; models?: readonly unknown[] | null },
    ) {
      if (patch.name !== undefined) requirePlainName(patch.name);
      const change: { name?: string; models?: string[] | null } = {};
      if (patch.name !== undefined) change.name = patch.name;
      if (patch.models !== undefined) change.models = checkModelPatterns(patch.models);
      const found = await db.transaction(async (trx) => {
        const updated = await repo.updateKey(trx, acting.workspaceUuid, uuid, change);
        if (updated) {
          await recordAudit(trx, acting, {
            action: 'key.update',
            target: { type: 'key', uuid },
            details: { fields: Object.keys(change) },
          });
        }
        return updated;
      });
      if (!found) throw notFound('Platform key');
      if (found.createdBy) deps.onCredentialsChanged?.(found.createdBy);
      const [row] = await repo.listCredentials(db.kysely, 'platform_keys', acting.workspaceUuid, uuid);
      if (!row) throw notFound('Platform key');
      return keyView(row);
    },

    /**
     * `taskhook key create`: a key in `workspaceUuid` (default: the user's personal workspace),
     * which the user must administer.
     * @throws AppError NOT_FOUND for an unknown user, FORBIDDEN when they are not admin or owner there.
     */
    async createPlatformKeyByEmail(
      email: string,
      name: string,
      opts: { workspaceUuid?: string; role?: KeyRole; models?: readonly unknown[] | null } = {},
    ) {
      requirePlainName(name);
      const models = checkModelPatterns(opts.models ?? null);
      const user = await deps.userByEmail(email);
      const workspaceUuid = opts.workspaceUuid ?? user.uuid;
      const held = await membershipsRepo.roleOf(db.kysely, workspaceUuid, user.uuid);
      if (!held || !roleAtLeast(held, 'admin')) {
        throw new AppError('FORBIDDEN', `${email} is not an admin or owner of workspace ${workspaceUuid}`);
      }
      const acting: Acting = {
        workspaceUuid,
        actor: { type: 'user', uuid: user.uuid, email: user.email },
        ip: null,
        requestId: null,
        clientRequestId: null,
      };
      const role = opts.role ?? 'admin';
      const { uuid, secret } = await issue('platform_keys', acting, user.uuid, name, role, models);
      return { uuid, name, key: secret, role, workspace_uuid: workspaceUuid, models };
    },

    async listPlatformKeys(workspaceUuid: string) {
      const rows = await repo.listCredentials(db.kysely, 'platform_keys', workspaceUuid);
      return rows.map(keyView);
    },

    revokePlatformKey: (acting: Acting, uuid: string) => revoke('platform_keys', acting, uuid, 'Platform key'),

    async createIngestToken(acting: Acting, createdBy: string) {
      const { uuid, secret, created_at, workspace_uuid } = await issue('ingest_tokens', acting, createdBy);
      return { uuid, token: secret, created_at, workspace_uuid };
    },

    async listIngestTokens(workspaceUuid: string) {
      return (await repo.listCredentials(db.kysely, 'ingest_tokens', workspaceUuid)).map(credentialView);
    },

    revokeIngestToken: (acting: Acting, uuid: string) => revoke('ingest_tokens', acting, uuid, 'Ingest token'),

    /** The workspace's current callback signing secret. */
    async getSigningSecret(workspaceUuid: string): Promise<{ secret: string; created_at: string }> {
      const [current] = await signingSecrets(workspaceUuid);
      if (!current) throw new AppError('INTERNAL_ERROR', 'Workspace has no signing secret');
      return { secret: current.secret, created_at: current.created_at };
    },

    /** Every secret that signs callbacks now: the current one, plus the previous one for 24 h after a rotation. */
    activeSigningSecrets: (workspaceUuid: string) =>
      signingSecrets(workspaceUuid).then((rows) => rows.map((r) => r.secret)),

    async rotateSigningSecret(acting: Acting): Promise<{ secret: string; created_at: string }> {
      const secret = newSigningSecret();
      const createdAt = now();
      const { workspaceUuid } = acting;
      await db.transaction(async (trx) => {
        await repo.expireCurrentSigningSecrets(trx, workspaceUuid, iso(clock.now() + DAY_MS));
        await repo.insertSigningSecret(trx, { uuid: newId(), workspaceUuid, sealed: deps.box.seal(secret), createdAt });
        await recordAudit(trx, acting, {
          action: 'signing_secret.rotate',
          target: { type: 'signing_secret', uuid: workspaceUuid },
          details: {},
        });
      });
      return { secret, created_at: createdAt };
    },

    /** A signing secret for a workspace made without one (a new team workspace). */
    async sealNewSigningSecret() {
      return deps.box.seal(newSigningSecret());
    },
  };
}
