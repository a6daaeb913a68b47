import type { ChangeCache } from '../../db/change-cache.js';
import type { Db } from '../../db/connect.js';
import { AppError, AuthError, invalid } from '../../http/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { MAX_MESSAGE_CHARS } from '../tasks/tasks-schemas.js';
import { type ServiceSpan, webhookSpan } from '../telemetry/service-spans-fns.js';
import { deriveSpanId, deriveTraceId, parseTraceparent } from '../telemetry/trace-context-fns.js';
import { createDeliveryBatcher } from './delivery-batcher.js';
import { createDeliveryLog } from './delivery-log.js';
import { createDeliveryWrites, DEDUP_WINDOW_MS } from './delivery-writes.js';
import { signatureMark } from './replay-fns.js';
import {
  authenticateScheme,
  DEFAULT_TOLERANCE_SECONDS,
  payloadDeliveryId,
  type SchemeAuth,
  slackChallenge,
} from './signature-schemes-fns.js';
import type { DeliveryRow } from './trigger-deliveries-repo.js';
import { authenticateDelivery, bodyKind, incomingDeliveryId, parsePayload } from './triggers-fns.js';
import type { TriggerRow, TriggersRepo } from './triggers-repo.js';
import type { SlackChallengeReply, WebhookAccepted } from './triggers-schemas.js';
import { checkTemplate, renderConcurrencyKey, renderTemplate } from './triggers-template-fns.js';

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

/** Whether a delivery proved knowledge of the trigger's secret: `ok`, or why not. */
export type DeliveryAuth = SchemeAuth;

const header = (headers: IncomingDelivery['headers'], name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/**
 * Receiving deliveries at a trigger's address (docs/api.md §7.3–7.5): authentication, the
 * documented checks, one task per delivery id, and the delivery log, which keeps at most
 * MAX_LOGGED_REFUSALS_PER_HOUR (delivery-log.ts) refusals for a bad secret or signature per trigger per hour.
 */
export function createWebhookService(deps: {
  db: Db;
  repo: TriggersRepo;
  /** Triggers by uuid for the lookup of every delivery; only served while it hears every trigger change. */
  cache: ChangeCache<TriggerRow>;
  agents: Pick<AgentsService, 'requireOwned'>;
  tasks: Pick<TaskSubmitter, 'prepare' | 'insert' | 'insertMany'>;
  box: SecretBox;
  clock: Clock;
  /** Records the service's own spans after the fact, best-effort (the webhook span of a delivery). */
  traceSpans?: (workspaceUuid: string, spans: ServiceSpan[]) => void;
  /** Called for each refusal for a bad secret or signature left out of the log (over the hourly cap). */
  onUnloggedRefusal?: () => void;
}) {
  const { db, repo, cache } = deps;
  const now = () => iso(deps.clock.now());

  const writes = createDeliveryWrites(deps);
  const logWithoutTask = createDeliveryLog(deps);

  const batcher = createDeliveryBatcher({
    db,
    repo,
    insertTasks: (trx, tasks) => deps.tasks.insertMany(trx, tasks),
    windowMs: DEDUP_WINDOW_MS,
    alone: writes.alone,
  });

  /** The trigger an address names, from the cache when it serves (an unknown address is never cached). */
  async function lookup(uuid: string): Promise<TriggerRow | undefined> {
    return cache.read(uuid, () => repo.findByUuid(db.kysely, uuid));
  }

  /** Secrets that open the trigger now: the current one, and the previous one for 24 h after a rotation. */
  function activeSecrets(t: TriggerRow): string[] {
    const secrets = [deps.box.open(t.secretSealed)];
    if (t.previousSecretSealed && t.previousSecretExpiresAt && t.previousSecretExpiresAt > now()) {
      secrets.push(deps.box.open(t.previousSecretSealed));
    }
    return secrets;
  }

  /** What a signed scheme checks a delivery against now. */
  const keysOf = (trigger: TriggerRow) => ({
    secrets: activeSecrets(trigger),
    nowMs: deps.clock.now(),
    toleranceSeconds: trigger.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
  });

  function authenticate(trigger: TriggerRow, incoming: IncomingDelivery): DeliveryAuth {
    if (trigger.verification !== 'secret') {
      return authenticateScheme(trigger.verification, incoming.headers, incoming.body, keysOf(trigger));
    }
    // The default scheme (section 7), the benchmarked path: nothing more than before schemes existed.
    const secret = header(incoming.headers, 'x-webhook-secret');
    const signature = header(incoming.headers, 'x-hub-signature-256');
    if (secret === undefined && signature === undefined) return 'missing';
    return authenticateDelivery({ secret, signature }, incoming.body, activeSecrets(trigger)) ? 'ok' : 'invalid';
  }

  /** The delivery id sent in headers: `webhook-id` for standard_webhooks, else section 7's headers. */
  function sentDeliveryId(trigger: TriggerRow, incoming: IncomingDelivery): string | undefined {
    if (trigger.verification !== 'standard_webhooks') return incomingDeliveryId(incoming.headers);
    const id = header(incoming.headers, 'webhook-id')?.trim();
    return id ? id : undefined;
  }

  /** The payload of an authenticated delivery (401, 415, 400 thrown in the documented shape). */
  function admitPayload(trigger: TriggerRow, auth: DeliveryAuth, incoming: IncomingDelivery) {
    if (auth !== 'ok') throw new AuthError(401, WEBHOOK_MESSAGES[auth]);
    const kind = bodyKind(header(incoming.headers, 'content-type'));
    if (kind === 'unsupported') {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        'Send the payload as application/json (or application/x-www-form-urlencoded with a payload field)',
      );
    }
    const parsed = parsePayload(kind, incoming.body, trigger.verification === 'slack');
    if (!parsed.ok) throw invalid('body', parsed.reason, `Invalid payload: ${parsed.reason}`);
    return parsed.payload;
  }

  /** The agent a parsed delivery creates its task on (403 TRIGGER_DISABLED, 503 AGENT_UNAVAILABLE). */
  async function admitTarget(trigger: TriggerRow): Promise<AgentRow> {
    if (!trigger.enabled) throw new AppError('TRIGGER_DISABLED', 'This trigger is disabled');
    const agent = await deps.agents.requireOwned(trigger.workspaceUuid, trigger.agentUuid);
    if (agent.status !== 'active') {
      throw new AppError('AGENT_UNAVAILABLE', `Agent is ${agent.status} and does not accept tasks`);
    }
    return agent;
  }

  return {
    /** The trigger a webhook address names, for the rate limit and the receive route. */
    lookup,

    /** Whether the delivery carries a secret or signature of the trigger (the rate limit asks first). */
    authenticate,

    /**
     * Receives a delivery: checks in the documented order, then creates exactly one task per
     * delivery id (24 h), in one transaction with the delivery record (shared with the other
     * deliveries of the same event-loop turn). Refusals are logged too.
     * `auth` is `authenticate(trigger, incoming)` when the caller already asked.
     * A slack trigger answers Slack's URL verification with its challenge (logged, no task).
     * @throws AuthError 401, AppError (415, 400, 403 TRIGGER_DISABLED, 503 AGENT_UNAVAILABLE; then 400 for a
     * delivery id over 255 characters).
     */
    async receive(
      trigger: TriggerRow,
      incoming: IncomingDelivery,
      auth?: DeliveryAuth,
    ): Promise<WebhookAccepted | SlackChallengeReply> {
      const receivedAtMs = deps.clock.now();
      let sent = sentDeliveryId(trigger, incoming);
      let deliveryId = sent ?? newId();
      let payload: unknown;
      let agent: AgentRow;
      try {
        payload = admitPayload(trigger, auth ?? authenticate(trigger, incoming), incoming);
        if (trigger.verification === 'stripe' || trigger.verification === 'slack') {
          // Their event ids live in the payload; refusals from here on are logged under them too.
          sent = payloadDeliveryId(trigger.verification, payload) ?? sent;
          deliveryId = sent ?? deliveryId;
          // Slack checks the address before an app may use it, enabled or not; nothing is created.
          const json = bodyKind(header(incoming.headers, 'content-type')) === 'json';
          const challenge = json && trigger.verification === 'slack' ? slackChallenge(payload) : null;
          if (challenge !== null) {
            await logWithoutTask(trigger, deliveryId.slice(0, MAX_DELIVERY_ID), 200, null);
            return { challenge };
          }
        }
        agent = await admitTarget(trigger);
        // Only after the documented checks: an unauthenticated sender learns nothing but 401.
        if (sent && sent.length > MAX_DELIVERY_ID) {
          throw invalid('delivery id', `must be at most ${MAX_DELIVERY_ID} characters`);
        }
      } catch (err) {
        if (err instanceof AuthError || err instanceof AppError) {
          await logWithoutTask(trigger, deliveryId.slice(0, MAX_DELIVERY_ID), err.status, err.message);
        }
        throw err;
      }

      const nowMs = deps.clock.now();
      const parts = checkTemplate(trigger.messageTemplate);
      const rendered = renderTemplate(parts, payload, MAX_MESSAGE_CHARS);
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
        agent,
        trigger.workspaceUuid,
        {
          message: rendered.text,
          metadata,
          concurrency_key: renderConcurrencyKey(trigger.concurrencyKey, payload),
        },
        nowMs,
        deliverySpan,
      );
      const accepted: WebhookAccepted = {
        task_id: task.uuid,
        status: task.status,
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
      // A signed scheme's delivery is known by its signature too: a copy answers the first 202.
      const { verification: type } = trigger;
      const mark = type === 'secret' ? null : signatureMark(type, incoming.headers, incoming.body, keysOf(trigger));
      const written = mark
        ? await writes.signed({ record, task, nowMs }, mark, trigger.workspaceUuid)
        : await batcher.write({ record, task, nowMs });
      if (!written.created) return written.first;
      deps.traceSpans?.(trigger.workspaceUuid, [
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

export type WebhookService = ReturnType<typeof createWebhookService>;
