import type { ChangeCache } from '../../db/change-cache.js';
import type { Db, Executor } from '../../db/connect.js';
import { invalid, notFound } from '../../http/errors.js';
import { requirePlainName } from '../../http/names.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { Acting } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentsRepo } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import type { AuditAction } from '../audit/audit-actions.js';
import { recordAudit } from '../audit/audit-repo.js';
import type { TriggerRow, TriggersRepo } from './triggers-repo.js';
import {
  type CreateTriggerInput,
  MAX_TRIGGERS_PER_AGENT,
  type PatchTriggerInput,
  type TriggerView,
} from './triggers-schemas.js';
import { checkTemplate } from './triggers-template-fns.js';
import {
  generateSecretFor,
  requireGeneratedSecret,
  requireSameType,
  suppliedSecret,
  toleranceOf,
  verificationView,
} from './verification-fns.js';
import type { VerificationInput } from './verification-schemas.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** The row field behind each field a PATCH may change. */
const PATCHED = {
  name: 'name',
  message_template: 'messageTemplate',
  concurrency_key: 'concurrencyKey',
  enabled: 'enabled',
} as const;

/**
 * Webhook triggers: management and their delivery logs (docs/api.md §7; receiving:
 * webhook-service.ts). Every change is audited in its own transaction.
 */
export function createTriggersService(deps: {
  db: Db;
  repo: TriggersRepo;
  /** The webhook receive's trigger cache, which this instance's own changes empty at commit. */
  cache: ChangeCache<TriggerRow>;
  agents: Pick<AgentsService, 'requireOwned' | 'requireOwnedIn'>;
  agentsRepo: Pick<AgentsRepo, 'findForClaim'>;
  box: SecretBox;
  clock: Clock;
  publicUrl: string;
}) {
  const { db, repo, cache } = deps;
  const now = () => iso(deps.clock.now());
  // Before the caller is answered; other instances hear of the change through the repository's
  // announcement.

  const view = (t: TriggerRow): TriggerView => ({
    uuid: t.uuid,
    agent_uuid: t.agentUuid,
    name: t.name,
    message_template: t.messageTemplate,
    concurrency_key: t.concurrencyKey,
    enabled: t.enabled,
    verification: verificationView(t),
    webhook_url: `${deps.publicUrl}/v1/webhooks/triggers/${t.uuid}`,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  });

  async function requireTrigger(ex: Executor, workspaceUuid: string, agentUuid: string, uuid: string) {
    // Inside a transaction every read goes through it: on SQLite a read on the database itself
    // would wait for the transaction's connection forever.
    await deps.agents.requireOwnedIn(ex, workspaceUuid, agentUuid);
    const trigger = await repo.findOwned(ex, workspaceUuid, agentUuid, uuid);
    if (!trigger) throw notFound('Trigger');
    return trigger;
  }

  /**
   * What a PATCH of `verification` changes on `current`: the tolerance, and a supplied secret,
   * which applies at once (the previous one, and any rotated-out one, stop at once).
   * @throws AppError 400 for another type (`verification.type`) or a secret of the wrong form.
   */
  function withScheme(current: TriggerRow, v: VerificationInput) {
    requireSameType(current.verification, v);
    const supplied = suppliedSecret(v);
    const toleranceSeconds = toleranceOf(v, current.toleranceSeconds);
    const secretChanged =
      supplied !== undefined && (!current.secretSupplied || deps.box.open(current.secretSealed) !== supplied);
    const row: Partial<TriggerRow> = { toleranceSeconds };
    if (secretChanged) {
      Object.assign(row, {
        secretSealed: deps.box.seal(supplied),
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        secretSupplied: true,
      });
    }
    return { row, changed: secretChanged || toleranceSeconds !== current.toleranceSeconds };
  }

  /** The audit entry of a change to trigger `t`; never its secret. */
  const audit = (trx: Executor, acting: Acting, action: AuditAction, t: TriggerRow, fields?: string[]) =>
    recordAudit(trx, acting, {
      action,
      target: { type: 'trigger', uuid: t.uuid },
      details: fields ? { agent_uuid: t.agentUuid, fields } : { agent_uuid: t.agentUuid, name: t.name },
    });

  return {
    async create(acting: Acting, agentUuid: string, input: CreateTriggerInput) {
      const { workspaceUuid } = acting;
      requirePlainName(input.name);
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      checkTemplate(input.message_template);
      if (input.concurrency_key) checkTemplate(input.concurrency_key, 'concurrency_key');
      const scheme: VerificationInput = input.verification ?? { type: 'secret' };
      const supplied = suppliedSecret(scheme);
      const secret = supplied ?? generateSecretFor(scheme.type);
      const at = now();
      const trigger: TriggerRow = {
        uuid: newId(),
        agentUuid,
        workspaceUuid,
        name: input.name,
        messageTemplate: input.message_template,
        concurrencyKey: input.concurrency_key ?? null,
        enabled: input.enabled ?? true,
        secretSealed: deps.box.seal(secret),
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        verification: scheme.type,
        toleranceSeconds: toleranceOf(scheme),
        secretSupplied: supplied !== undefined,
        createdAt: at,
        updatedAt: at,
      };
      await db.transaction(async (trx) => {
        // The agent row lock (PostgreSQL) makes the count and the insert one step; an agent
        // deleted while this waited for that lock gets no trigger.
        if (!(await deps.agentsRepo.findForClaim(trx, agentUuid))) throw notFound('Agent');
        if ((await repo.count(trx, agentUuid)) >= MAX_TRIGGERS_PER_AGENT) {
          throw invalid('agent', `has the maximum of ${MAX_TRIGGERS_PER_AGENT} triggers`);
        }
        await repo.insert(trx, trigger);
        await audit(trx, acting, 'trigger.create', trigger);
      });
      // A supplied secret is never answered: the owner has it already.
      return supplied === undefined ? { ...view(trigger), webhook_secret: secret } : view(trigger);
    },

    async list(workspaceUuid: string, agentUuid: string, page: number, limit: number) {
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const { triggers, total } = await repo.list(db.kysely, agentUuid, (page - 1) * limit, limit);
      return { triggers: triggers.map(view), total };
    },

    get: async (workspaceUuid: string, agentUuid: string, uuid: string) =>
      view(await requireTrigger(db.kysely, workspaceUuid, agentUuid, uuid)),

    /** Audited as `trigger.update` naming the fields whose value changed (no entry when none did). */
    async patch(acting: Acting, agentUuid: string, uuid: string, input: PatchTriggerInput) {
      const { workspaceUuid } = acting;
      if (input.name !== undefined) requirePlainName(input.name);
      if (input.message_template !== undefined) checkTemplate(input.message_template);
      if (input.concurrency_key) checkTemplate(input.concurrency_key, 'concurrency_key');
      return db.transaction(async (trx) => {
        const current = await requireTrigger(trx, workspaceUuid, agentUuid, uuid);
        const scheme = input.verification && withScheme(current, input.verification);
        const next: TriggerRow = {
          ...current,
          name: input.name ?? current.name,
          messageTemplate: input.message_template ?? current.messageTemplate,
          concurrencyKey: input.concurrency_key === undefined ? current.concurrencyKey : input.concurrency_key,
          enabled: input.enabled ?? current.enabled,
          ...scheme?.row,
          updatedAt: now(),
        };
        await repo.update(trx, next);
        cache.invalidateAtCommit(trx, uuid);
        const fields: string[] = (['name', 'message_template', 'concurrency_key', 'enabled'] as const).filter(
          (f) => input[f] !== undefined && current[PATCHED[f]] !== next[PATCHED[f]],
        );
        if (scheme?.changed) fields.push('verification');
        if (fields.length > 0) await audit(trx, acting, 'trigger.update', next, fields);
        return view(next);
      });
    },

    async remove(acting: Acting, agentUuid: string, uuid: string) {
      await db.transaction(async (trx) => {
        const trigger = await requireTrigger(trx, acting.workspaceUuid, agentUuid, uuid);
        await repo.remove(trx, uuid);
        await audit(trx, acting, 'trigger.delete', trigger);
        cache.invalidateAtCommit(trx, uuid);
      });
    },

    /** A new secret, shown once; the previous one keeps working for 24 hours. */
    async rotateSecret(acting: Acting, agentUuid: string, uuid: string) {
      let secret = '';
      const trigger = await db.transaction(async (trx) => {
        const current = await requireTrigger(trx, acting.workspaceUuid, agentUuid, uuid);
        requireGeneratedSecret(current);
        secret = generateSecretFor(current.verification);
        const next: TriggerRow = {
          ...current,
          secretSealed: deps.box.seal(secret),
          previousSecretSealed: current.secretSealed,
          previousSecretExpiresAt: iso(deps.clock.now() + DAY_MS),
          updatedAt: now(),
        };
        await repo.update(trx, next);
        cache.invalidateAtCommit(trx, uuid);
        await audit(trx, acting, 'trigger.rotate_secret', next);
        return next;
      });
      return { ...view(trigger), webhook_secret: secret };
    },

    async deliveries(workspaceUuid: string, agentUuid: string, uuid: string, page: number, limit: number) {
      await requireTrigger(db.kysely, workspaceUuid, agentUuid, uuid);
      const { deliveries, total } = await repo.listDeliveries(db.kysely, uuid, (page - 1) * limit, limit);
      return {
        deliveries: deliveries.map((d) => ({
          delivery_id: d.deliveryId,
          received_at: d.receivedAt,
          status_code: d.statusCode,
          task_id: d.taskUuid,
          error: d.error,
        })),
        total,
      };
    },
  };
}

export type TriggersService = ReturnType<typeof createTriggersService>;
