import { isIP } from 'node:net';
import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import type { SecretBox } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { isPrivateAddress } from '../../lib/outbound.js';
import { type Clock, iso } from '../../lib/time.js';
import type { TaskChangeEvent } from '../tasks/lifecycle/tasks-writer.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskView } from '../tasks/tasks-schemas.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { invalidParams, RPC_ERRORS, RpcError } from './a2a-errors.js';
import {
  MAX_PUSH_CONFIGS,
  type PushConfigInput,
  pushConfigView,
  pushEventType,
  type StoredPushConfig,
} from './a2a-push-fns.js';
import type { A2aPushRepo } from './a2a-push-repo.js';
import type { A2aServerRepo } from './a2a-server-repo.js';
import { toA2aTask } from './a2a-task-fns.js';

/** What the callbacks room offers push deliveries (handed in by app.ts). */
export interface PushOutbox {
  enqueuePush(
    trx: Executor,
    d: {
      taskUuid: string;
      workspaceUuid: string;
      url: string;
      eventType: string;
      payload: string;
      configUuid: string;
      configId: string;
      headers: Record<string, string>;
    },
  ): Promise<void>;
  endPushConfig(trx: Executor, configUuid: string): Promise<void>;
}

/**
 * A2A push notification configs of a task (create, get, list, delete) and the notification each
 * config gets for every state change of its task, queued in the change's transaction and sent by
 * the callbacks room's sender (signed, retried, fair across workspaces).
 */
export function createA2aPushService(deps: {
  db: Db;
  repo: A2aPushRepo;
  serverRepo: Pick<A2aServerRepo, 'extras'>;
  tasks: Pick<TasksService, 'requireTask'>;
  outbox: PushOutbox;
  box: SecretBox;
  allowPrivate: boolean;
  clock: Clock;
  /** A2A's error for a refusal of the tasks service (-32001 for an unknown task). */
  rpcErrorOf: (err: unknown) => unknown;
}) {
  const { db, repo } = deps;

  async function requireTask(ref: TaskRef): Promise<TaskRecord> {
    try {
      return await deps.tasks.requireTask(ref);
    } catch (err) {
      throw deps.rpcErrorOf(err);
    }
  }

  /** Section 9's private-address rule on the URL's literal host (names are checked at connect time). */
  function checkHost(input: PushConfigInput, field: string) {
    if (deps.allowPrivate) return;
    const host = new URL(input.url).hostname.replace(/^\[|\]$/g, '');
    const local = host === 'localhost' || host.endsWith('.localhost');
    if (local || (isIP(host) && isPrivateAddress(host))) {
      throw invalidParams(field, 'url points to a private or reserved address');
    }
  }

  /**
   * Stores the config on the task in `trx`: a new one, or a replacement of the task's config of
   * the same id. @throws RpcError -32602 for an 11th config.
   */
  async function store(trx: Executor, task: TaskRecord, input: PushConfigInput, field: string) {
    checkHost(input, `${field}url`);
    const now = iso(deps.clock.now());
    const sealed = {
      url: input.url,
      token: input.token === undefined ? null : deps.box.seal(input.token),
      auth_scheme: input.authentication?.scheme ?? null,
      auth_credentials: input.authentication ? deps.box.seal(input.authentication.credentials) : null,
      updated_at: now,
    };
    const existing = await repo.listForTask(trx, task.uuid, true);
    const configId = input.id ?? newId();
    const same = existing.find((c) => c.configId === configId);
    if (same) {
      await repo.replace(trx, same.uuid, sealed);
      return {
        ...same,
        url: sealed.url,
        token: sealed.token,
        authScheme: sealed.auth_scheme,
        authCredentials: sealed.auth_credentials,
      };
    }
    if (existing.length >= MAX_PUSH_CONFIGS) {
      throw invalidParams(`${field}id`, `a task holds at most ${MAX_PUSH_CONFIGS} push notification configs`);
    }
    const position = existing.reduce((max, c) => Math.max(max, c.position), 0) + 1;
    const row = {
      uuid: newId(),
      task_uuid: task.uuid,
      workspace_uuid: task.workspaceUuid,
      config_id: configId,
      position,
      created_at: now,
      ...sealed,
    };
    await repo.insert(trx, row);
    return {
      uuid: row.uuid,
      taskUuid: task.uuid,
      configId,
      position,
      url: row.url,
      token: row.token,
      authScheme: row.auth_scheme,
      authCredentials: row.auth_credentials,
    };
  }

  /** Queues one notification of the task as `view` shows it to each of `configs`. */
  async function notify(trx: Executor, task: TaskRecord, view: TaskView, configs: StoredPushConfig[]) {
    if (configs.length === 0) return;
    const extras = await deps.serverRepo.extras(trx, [task.uuid]);
    const a2a = toA2aTask(view, { contextId: extras.contexts.get(task.uuid), messageIds: new Map() }, 0);
    const payload = JSON.stringify({ task: a2a });
    for (const c of configs) {
      const headers: Record<string, string> = {};
      if (c.authScheme !== null && c.authCredentials !== null) {
        headers.authorization = `${c.authScheme} ${deps.box.open(c.authCredentials)}`;
      }
      if (c.token !== null) headers['x-a2a-notification-token'] = deps.box.open(c.token);
      await deps.outbox.enqueuePush(trx, {
        taskUuid: task.uuid,
        workspaceUuid: task.workspaceUuid,
        url: c.url,
        eventType: pushEventType(a2a.status.state),
        payload,
        configUuid: c.uuid,
        configId: c.configId,
        headers,
      });
    }
  }

  return {
    store,

    /** The notification of a task's creation, for a config stored with the message that created it. */
    notifyCreated: (trx: Executor, task: TaskRecord, config: StoredPushConfig) =>
      notify(trx, task, taskView(task), [config]),

    /** Hub `task:statusChanged`, in the change's transaction: one notification per config of the task. */
    async onStatusChange({ trx, task, view, before }: TaskChangeEvent) {
      if (before === null || before.status === task.status) return;
      await notify(trx, task, view, await repo.listForTask(trx, task.uuid));
    },

    /** Hub `callback:pushGone`: the receiver answered 410, its config goes. */
    async onGone({ trx, configUuid }: { trx: Executor; configUuid: string }) {
      await repo.removeByUuid(trx, configUuid);
    },

    async create(ref: TaskRef, input: PushConfigInput) {
      const task = await requireTask(ref);
      for (let tries = 0; ; tries++) {
        try {
          const stored = await db.transaction((trx) => store(trx, task, input, ''));
          return pushConfigView(stored);
        } catch (err) {
          // A concurrent create took the same place (or id): count again.
          if (!(err instanceof UniqueViolationError) || tries >= 2) throw err;
        }
      }
    },

    async get(ref: TaskRef, configId: string) {
      await requireTask(ref);
      const found = await repo.find(db.kysely, ref.taskUuid, configId);
      if (!found) throw new RpcError(RPC_ERRORS.taskNotFound, 'Push notification config not found');
      return pushConfigView(found);
    },

    async list(ref: TaskRef) {
      await requireTask(ref);
      const configs = await repo.listForTask(db.kysely, ref.taskUuid);
      return { configs: configs.map(pushConfigView), nextPageToken: '' };
    },

    /** Idempotent: an unknown id of a known task is the same success. */
    async remove(ref: TaskRef, configId: string) {
      await requireTask(ref);
      await db.transaction(async (trx) => {
        const found = await repo.find(trx, ref.taskUuid, configId);
        if (!found) return;
        await repo.removeByUuid(trx, found.uuid);
        await deps.outbox.endPushConfig(trx, found.uuid);
      });
      return {};
    },
  };
}

export type A2aPushService = ReturnType<typeof createA2aPushService>;
