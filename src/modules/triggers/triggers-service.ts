import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError, AuthError, invalid, notFound } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentsRepo } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import { MAX_MESSAGE_CHARS } from '../tasks/tasks-schemas.js';
import type { TasksService } from '../tasks/tasks-service.js';
import { type ServiceSpan, webhookSpan } from '../telemetry/service-spans-fns.js';
import { deriveSpanId, deriveTraceId, parseTraceparent } from '../telemetry/trace-context-fns.js';
import {
  authenticateDelivery,
  bodyKind,
  generateWebhookSecret,
  incomingDeliveryId,
  parsePayload,
} from './triggers-fns.js';
import type { DeliveryRow, TriggerRow, TriggersRepo } from './triggers-repo.js';
import {
  type CreateTriggerInput,
  MAX_TRIGGERS_PER_AGENT,
  type PatchTriggerInput,
  type TriggerView,
  type WebhookAccepted,
} from './triggers-schemas.js';
import { parseTemplate, renderTemplate } from './triggers-template-fns.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_DELIVERY_ID = 255;

export const WEBHOOK_MESSAGES = {
  missing: 'Webhook secret or signature is required',
  invalid: 'Invalid webhook secret or signature',
} as const;

/** An incoming delivery, as plain data (services never see Fastify types). */
export interface IncomingDelivery {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function checkTemplate(template: string) {
  const parsed = parseTemplate(template);
  if (!parsed.ok) {
    const reason = `${parsed.error.reason} (at character ${parsed.error.position})`;
    throw new AppError('INVALID_REQUEST', `Invalid message_template: ${reason}`, {
      field: 'message_template',
      reason,
    });
  }
  return parsed.parts;
}

const header = (headers: IncomingDelivery['headers'], name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** Webhook triggers: management and receiving deliveries that create tasks (docs/api.md §7). */
export function createTriggersService(deps: {
  db: Db;
  repo: TriggersRepo;
  agents: Pick<AgentsService, 'requireOwned' | 'requireOwnedIn'>;
  agentsRepo: Pick<AgentsRepo, 'findForClaim'>;
  tasks: Pick<TasksService, 'prepare' | 'insert'>;
  box: SecretBox;
  clock: Clock;
  publicUrl: string;
  /** Records the service's own spans after the fact, best-effort (the webhook span of a delivery). */
  traceSpans?: (userUuid: string, spans: ServiceSpan[]) => void;
}) {
  const { db, repo } = deps;
  const now = () => iso(deps.clock.now());

  const view = (t: TriggerRow): TriggerView => ({
    uuid: t.uuid,
    agent_uuid: t.agentUuid,
    name: t.name,
    message_template: t.messageTemplate,
    enabled: t.enabled,
    webhook_url: `${deps.publicUrl}/v1/webhooks/triggers/${t.uuid}`,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  });

  async function requireTrigger(ex: Executor, userUuid: string, agentUuid: string, uuid: string) {
    // Inside a transaction every read goes through it: on SQLite a read on the database itself
    // would wait for the transaction's connection forever.
    await deps.agents.requireOwnedIn(ex, userUuid, agentUuid);
    const trigger = await repo.findOwned(ex, userUuid, agentUuid, uuid);
    if (!trigger) throw notFound('Trigger');
    return trigger;
  }

  /** Secrets that open the trigger now: the current one, and the previous one for 24 h after a rotation. */
  function activeSecrets(t: TriggerRow): string[] {
    const secrets = [deps.box.open(t.secretSealed)];
    if (t.previousSecretSealed && t.previousSecretExpiresAt && t.previousSecretExpiresAt > now()) {
      secrets.push(deps.box.open(t.previousSecretSealed));
    }
    return secrets;
  }

  async function logRefusal(trigger: TriggerRow, deliveryId: string, statusCode: number, error: string) {
    const row: DeliveryRow = {
      uuid: newId(),
      triggerUuid: trigger.uuid,
      deliveryId,
      dedupKey: null,
      receivedAt: now(),
      statusCode,
      taskUuid: null,
      error,
      response: null,
    };
    await db.transaction((trx) => repo.insertDelivery(trx, row));
  }

  /** Authenticates, parses and checks a delivery; every refusal is thrown in the documented shape. */
  async function admit(trigger: TriggerRow, incoming: IncomingDelivery) {
    const secret = header(incoming.headers, 'x-webhook-secret');
    const signature = header(incoming.headers, 'x-hub-signature-256');
    if (secret === undefined && signature === undefined) throw new AuthError(401, WEBHOOK_MESSAGES.missing);
    if (!authenticateDelivery({ secret, signature }, incoming.body, activeSecrets(trigger))) {
      throw new AuthError(401, WEBHOOK_MESSAGES.invalid);
    }
    const kind = bodyKind(header(incoming.headers, 'content-type'));
    if (kind === 'unsupported') {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        'Send the payload as application/json (or application/x-www-form-urlencoded with a payload field)',
      );
    }
    const parsed = parsePayload(kind, incoming.body);
    if (!parsed.ok) throw invalid('body', parsed.reason, `Invalid payload: ${parsed.reason}`);
    if (!trigger.enabled) throw new AppError('TRIGGER_DISABLED', 'This trigger is disabled');
    const agent = await deps.agents.requireOwned(trigger.userUuid, trigger.agentUuid);
    if (agent.status !== 'active') {
      throw new AppError('AGENT_UNAVAILABLE', `Agent is ${agent.status} and does not accept tasks`);
    }
    return { agent, payload: parsed.payload };
  }

  return {
    /** The trigger a webhook address names, for the rate limit and the receive route. */
    lookup: (uuid: string) => repo.findByUuid(db.kysely, uuid),

    async create(userUuid: string, agentUuid: string, input: CreateTriggerInput) {
      await deps.agents.requireOwned(userUuid, agentUuid);
      checkTemplate(input.message_template);
      const secret = generateWebhookSecret();
      const at = now();
      const trigger: TriggerRow = {
        uuid: newId(),
        agentUuid,
        userUuid,
        name: input.name,
        messageTemplate: input.message_template,
        enabled: input.enabled ?? true,
        secretSealed: deps.box.seal(secret),
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        createdAt: at,
        updatedAt: at,
      };
      await db.transaction(async (trx) => {
        // The agent row lock (PostgreSQL) makes the count and the insert one step.
        await deps.agentsRepo.findForClaim(trx, agentUuid);
        if ((await repo.count(trx, agentUuid)) >= MAX_TRIGGERS_PER_AGENT) {
          throw invalid('agent', `has the maximum of ${MAX_TRIGGERS_PER_AGENT} triggers`);
        }
        await repo.insert(trx, trigger);
      });
      return { ...view(trigger), webhook_secret: secret };
    },

    async list(userUuid: string, agentUuid: string, page: number, limit: number) {
      await deps.agents.requireOwned(userUuid, agentUuid);
      const { triggers, total } = await repo.list(db.kysely, agentUuid, (page - 1) * limit, limit);
      return { triggers: triggers.map(view), total };
    },

    get: async (userUuid: string, agentUuid: string, uuid: string) =>
      view(await requireTrigger(db.kysely, userUuid, agentUuid, uuid)),

    async patch(userUuid: string, agentUuid: string, uuid: string, input: PatchTriggerInput) {
      if (input.message_template !== undefined) checkTemplate(input.message_template);
      return db.transaction(async (trx) => {
        const current = await requireTrigger(trx, userUuid, agentUuid, uuid);
        const next: TriggerRow = {
          ...current,
          name: input.name ?? current.name,
          messageTemplate: input.message_template ?? current.messageTemplate,
          enabled: input.enabled ?? current.enabled,
          updatedAt: now(),
        };
        await repo.update(trx, next);
        return view(next);
      });
    },

    async remove(userUuid: string, agentUuid: string, uuid: string) {
      await db.transaction(async (trx) => {
        await requireTrigger(trx, userUuid, agentUuid, uuid);
        await repo.remove(trx, uuid);
      });
    },

    /** A new secret, shown once; the previous one keeps working for 24 hours. */
    async rotateSecret(userUuid: string, agentUuid: string, uuid: string) {
      const secret = generateWebhookSecret();
      const trigger = await db.transaction(async (trx) => {
        const current = await requireTrigger(trx, userUuid, agentUuid, uuid);
        const next: TriggerRow = {
          ...current,
          secretSealed: deps.box.seal(secret),
          previousSecretSealed: current.secretSealed,
          previousSecretExpiresAt: iso(deps.clock.now() + DAY_MS),
          updatedAt: now(),
        };
        await repo.update(trx, next);
        return next;
      });
      return { ...view(trigger), webhook_secret: secret };
    },

    async deliveries(userUuid: string, agentUuid: string, uuid: string, page: number, limit: number) {
      await requireTrigger(db.kysely, userUuid, agentUuid, uuid);
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

    /**
     * Receives a delivery: checks in the documented order, then creates exactly one task per
     * delivery id (24 h), in one transaction with the delivery record. Refusals are logged too.
     * @throws AuthError 401, AppError (415, 400, 403 TRIGGER_DISABLED, 503 AGENT_UNAVAILABLE; then 400 for a
     * delivery id over 255 characters).
     */
    async receive(trigger: TriggerRow, incoming: IncomingDelivery): Promise<WebhookAccepted> {
      const receivedAtMs = deps.clock.now();
      const sent = incomingDeliveryId(incoming.headers);
      const deliveryId = sent ?? newId();
      let admitted: Awaited<ReturnType<typeof admit>>;
      try {
        admitted = await admit(trigger, incoming);
        // Only after the documented checks: an unauthenticated sender learns nothing but 401.
        if (sent && sent.length > MAX_DELIVERY_ID) {
          throw invalid('delivery id', `must be at most ${MAX_DELIVERY_ID} characters`);
        }
      } catch (err) {
        if (err instanceof AuthError || err instanceof AppError) {
          await logRefusal(trigger, deliveryId.slice(0, MAX_DELIVERY_ID), err.status, err.message);
        }
        throw err;
      }

      const nowMs = deps.clock.now();
      const parts = checkTemplate(trigger.messageTemplate);
      const rendered = renderTemplate(parts, admitted.payload, MAX_MESSAGE_CHARS);
      const metadata: Record<string, unknown> = {
        trigger_uuid: trigger.uuid,
        delivery_id: deliveryId,
        template_missing: rendered.missing,
        ...(rendered.truncated ? { template_truncated: true } : {}),
      };
      const recordUuid = newId();
      // The task's trace starts at this delivery (or joins the sender's trace when it sent one).
      const sender = parseTraceparent(incoming.headers.traceparent);
      const deliverySpan = {
        traceId: sender?.traceId ?? deriveTraceId('delivery', recordUuid),
        spanId: deriveSpanId('delivery', recordUuid),
      };
      const { task, response } = await deps.tasks.prepare(
        admitted.agent,
        trigger.userUuid,
        { message: rendered.text, metadata },
        nowMs,
        deliverySpan,
      );
      const accepted: WebhookAccepted = {
        task_id: task.uuid,
        status: 'queued',
        trigger_uuid: trigger.uuid,
        delivery_id: deliveryId,
        poll_url: response.poll_url,
      };
      const record: DeliveryRow = {
        uuid: recordUuid,
        triggerUuid: trigger.uuid,
        deliveryId,
        dedupKey: sent ?? null,
        receivedAt: iso(nowMs),
        statusCode: 202,
        taskUuid: task.uuid,
        error: null,
        response: accepted,
      };
      try {
        await db.transaction(async (trx) => {
          if (sent) {
            const earlier = await repo.findByDedupKey(trx, trigger.uuid, sent);
            if (earlier && Date.parse(earlier.receivedAt) <= nowMs - DAY_MS)
              await repo.releaseDedupKey(trx, earlier.uuid);
          }
          await repo.insertDelivery(trx, record);
          await deps.tasks.insert(trx, task);
        });
      } catch (err) {
        if (!(sent && err instanceof UniqueViolationError)) throw err;
        // A repeat of an accepted delivery: answer the first 202 again, create nothing.
        const first = await repo.findByDedupKey(db.kysely, trigger.uuid, sent);
        if (!first) throw new AppError('CONFLICT', 'The same delivery is being processed; retry');
        await db.transaction((trx) =>
          repo.insertDelivery(trx, {
            ...record,
            uuid: newId(),
            dedupKey: null,
            taskUuid: first.taskUuid,
            response: null,
          }),
        );
        return first.response as WebhookAccepted;
      }
      deps.traceSpans?.(trigger.userUuid, [
        webhookSpan({
          ...deliverySpan,
          parentSpanId: sender?.spanId ?? null,
          triggerUuid: trigger.uuid,
          triggerName: trigger.name,
          deliveryId,
          taskUuid: task.uuid,
          receivedAtMs,
          answeredAtMs: deps.clock.now(),
        }),
      ]);
      return accepted;
    },
  };
}

export type TriggersService = ReturnType<typeof createTriggersService>;
