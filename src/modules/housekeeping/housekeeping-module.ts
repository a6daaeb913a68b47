import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Executor } from '../../db/connect.js';
import { createLoop } from '../../lib/loop.js';
import { iso } from '../../lib/time.js';
import type { ProcessDeps } from '../../process-deps.js';
import { deleteExpiredMessageIds } from '../a2a-server/a2a-purge.js';
import { recoveryRepo } from '../accounts/accounts-recovery-repo.js';
import { agentsPurge } from '../agents/agents-purge.js';
import { auditRepo } from '../audit/audit-repo.js';
import { deleteExpiredOAuth, deleteUnusedClients } from '../mcp-oauth/mcp-oauth-repo.js';
import { createSpendSweep } from '../spotlight/budgets/spend-sweep.js';
import { callsRepo } from '../spotlight/usage/calls-repo.js';
import { idempotencyRepo } from '../tasks/submit/idempotency-repo.js';
import { taskQueries } from '../tasks/task-queries.js';
import { telemetryRepo } from '../telemetry/telemetry-repo.js';
import { deleteExpiredSignatures, deleteOldDeliveries } from '../triggers/triggers-purge.js';
import { workspacesPurge } from '../workspaces/workspaces-purge.js';
import { createHousekeepingRepo } from './housekeeping-repo.js';
import { AGENT_STEPS, WORKSPACE_STEPS } from './workspace-purge.js';

const DAY_MS = 86_400_000;
/** Rows per statement: small enough that one batch holds SQLite's writer for a few milliseconds. */
export const HOUSEKEEPING_BATCH = 200;
/** Batches per table per round, so one round cannot run for long; the next round goes on. */
const MAX_BATCHES = 50;
/** Deleted workspaces looked at per round. */
const PURGE_WORKSPACES_PER_ROUND = 10;
/** Key of the PostgreSQL advisory lock that lets one instance at a time do housekeeping. */
export const HOUSEKEEPING_LOCK_KEY = 0x7461736b; // "task"

/** What one round deletes: a repository's `deleteExpired…(ex, before, limit)` and its cutoff. */
type Kind = readonly [(ex: Executor, before: string, limit: number) => Promise<number>, string];
type KindName = Exclude<keyof HousekeepingResult, 'ran' | 'deletedWorkspaceRows' | 'workspacesPurged'>;

/** Rows deleted by one round, per kind. */
export interface HousekeepingResult {
  tasks: number;
  triggerDeliveries: number;
  /** Remembered signatures of signed deliveries past their replay window. */
  triggerSignatures: number;
  idempotencyKeys: number;
  /** A2A messageIds past their 24 hours of duplicate detection. */
  a2aMessageIds: number;
  telemetrySpans: number;
  telemetryLogs: number;
  spotlightCalls: number;
  /** Model-budget spend totals of windows past the records' retention, and of deleted tasks. */
  spotlightSpend: number;
  /** Audit entries past TASKHOOK_AUDIT_RETENTION_DAYS. */
  auditLog: number;
  /** Unverified registrations past TASKHOOK_UNVERIFIED_TTL_HOURS (3.1). */
  unverifiedAccounts: number;
  /** MCP OAuth authorization requests, codes and tokens past their expiry. */
  mcpOAuthExpired: number;
  /** Dynamically registered MCP OAuth clients with no grant 7 days after registration. */
  mcpOAuthClients: number;
  /** Rows of deleted workspaces (every kind together). */
  deletedWorkspaceRows: number;
  /** Deleted workspaces whose last row went this round. */
  workspacesPurged: number;
  /** False when another instance held the lock (PostgreSQL), so this round did not finish. */
  ran: boolean;
}

/**
 * Deletes what is past its time, in small batches in the background: finished tasks (with their
 * events and callback deliveries) and trigger deliveries older than TASKHOOK_RETENTION_DAYS,
 * idempotency keys and A2A messageIds past their 24 hours, telemetry past
 * TASKHOOK_TELEMETRY_RETENTION_DAYS, model calls past TASKHOOK_SPOTLIGHT_RETENTION_DAYS, audit
 * entries past TASKHOOK_AUDIT_RETENTION_DAYS, unverified registrations past
 * TASKHOOK_UNVERIFIED_TTL_HOURS, and every row of a deleted workspace. Each
 * room owns the SQL of its delete; this module only paces them. On PostgreSQL each batch takes an
 * advisory lock, so instances take turns instead of deleting the same rows together.
 */
export function createHousekeepingModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  /** Rows per statement (tests make it small); default HOUSEKEEPING_BATCH. */
  batchSize?: number;
  /** Statements per kind per round (tests make it small); default 50. */
  maxBatches?: number;
}) {
  const { db, clock, logger } = deps.runtime;
  const batchSize = deps.batchSize ?? HOUSEKEEPING_BATCH;
  const maxBatches = deps.maxBatches ?? MAX_BATCHES;
  const repo = createHousekeepingRepo();
  const deleteExpiredSpend = createSpendSweep(taskQueries.existing);
  // Set at close, so a round in progress stops between batches.
  let stopped = false;

  /** One batch in its own transaction; null when another instance holds the lock. */
  function batch(work: (ex: Executor) => Promise<number>): Promise<number | null> {
    return db.transaction(async (ex) => {
      if (db.dialect === 'postgres' && !(await repo.tryLock(ex, HOUSEKEEPING_LOCK_KEY))) return null;
      return work(ex);
    });
  }

  /**
   * Repeats a batch until it deletes less than a full batch (`finished`) or the round's cap is
   * reached; null when another instance holds the lock.
   */
  async function drain(work: (ex: Executor) => Promise<number>): Promise<{ total: number; finished: boolean } | null> {
    let total = 0;
    for (let i = 0; i < maxBatches && !stopped; i++) {
      const n = await batch(work);
      if (n === null) return null;
      total += n;
      if (n < batchSize) return { total, finished: true };
    }
    return { total, finished: false };
  }

  /** Runs `steps` for `owner` until each is done; false when one is not finished this round, null when locked out. */
  async function drainAll(
    steps: ReadonlyArray<readonly [string, (ex: Executor, owner: string, limit: number) => Promise<number>]>,
    owner: string,
    count: { rows: number },
  ): Promise<boolean | null> {
    for (const [, step] of steps) {
      const done = await drain((ex) => step(ex, owner, batchSize));
      if (done === null) return null;
      count.rows += done.total;
      if (!done.finished) return false;
    }
    return true;
  }

  /**
   * Deletes the rows of deleted workspaces through the rooms' purge steps (see workspace-purge.ts):
   * agent by agent, then the workspace's other rows, then its own row once nothing of it is left.
   * A workspace not finished this round goes on in the next.
   */
  async function purgeDeleted(): Promise<{ rows: number; workspaces: number } | null> {
    const count = { rows: 0 };
    let workspaces = 0;
    for (const workspaceUuid of await workspacesPurge.deletedWorkspaces(db.kysely, PURGE_WORKSPACES_PER_ROUND)) {
      let finished: boolean | null = true;
      agents: for (;;) {
        const agents = await agentsPurge.agentsOf(db.kysely, workspaceUuid, batchSize);
        for (const agentUuid of agents) {
          finished = stopped ? false : await drainAll(AGENT_STEPS, agentUuid, count);
          if (finished !== true) break agents;
          const gone = await batch((ex) => agentsPurge.deleteAgent(ex, agentUuid));
          if (gone === null) return null;
          count.rows += gone;
        }
        if (agents.length < batchSize) break;
      }
      if (finished === true) finished = await drainAll(WORKSPACE_STEPS, workspaceUuid, count);
      if (finished === null) return null;
      if (!finished || stopped) continue;
      const gone = await batch((ex) => workspacesPurge.deleteRow(ex, workspaceUuid));
      if (gone === null) return null;
      workspaces += gone;
    }
    return { rows: count.rows, workspaces };
  }

  /** The kinds of old row, each with its cutoff at `now`. */
  function kinds(now: number): Record<KindName, Kind> {
    const { config } = deps;
    const daysAgo = (days: number) => iso(now - days * DAY_MS);
    return {
      tasks: [taskQueries.deleteFinished, daysAgo(config.retentionDays)],
      triggerDeliveries: [deleteOldDeliveries, daysAgo(config.retentionDays)],
      triggerSignatures: [deleteExpiredSignatures, iso(now)],
      idempotencyKeys: [idempotencyRepo.deleteExpired, iso(now)],
      a2aMessageIds: [deleteExpiredMessageIds, iso(now)],
      telemetrySpans: [telemetryRepo.deleteExpiredSpans, daysAgo(config.telemetryRetentionDays)],
      telemetryLogs: [telemetryRepo.deleteExpiredLogs, daysAgo(config.telemetryRetentionDays)],
      spotlightCalls: [callsRepo.deleteExpiredCalls, daysAgo(config.spotlightRetentionDays)],
      spotlightSpend: [deleteExpiredSpend, daysAgo(config.spotlightRetentionDays)],
      auditLog: [auditRepo.deleteExpired, daysAgo(config.auditRetentionDays)],
      unverifiedAccounts: [recoveryRepo.deleteExpiredRegistrations, iso(now - config.unverifiedTtlHours * 3_600_000)],
      mcpOAuthExpired: [deleteExpiredOAuth, iso(now)],
      mcpOAuthClients: [deleteUnusedClients, daysAgo(7)],
    };
  }

  /** One round over every kind of old row. Tests call it directly. */
  async function runOnce(): Promise<HousekeepingResult> {
    const counts = {} as Record<KindName, number>;
    let ran = true;
    for (const [name, [del, before]] of Object.entries(kinds(clock.now())) as Array<[KindName, Kind]>) {
      const n = await drain((ex) => del(ex, before, batchSize));
      counts[name] = n?.total ?? 0;
      if (n === null) ran = false;
    }
    const purged = await purgeDeleted();
    if (purged === null) ran = false;
    return { ...counts, deletedWorkspaceRows: purged?.rows ?? 0, workspacesPurged: purged?.workspaces ?? 0, ran };
  }

  const loop = createLoop({
    name: 'housekeeping',
    intervalMs: deps.config.housekeepingIntervalMs,
    log: logger,
    run: async () => {
      const r = await runOnce();
      if (Object.values(r).some((n) => typeof n === 'number' && n > 0)) logger.info(r, 'housekeeping deleted old rows');
    },
  });

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => loop.start());
    app.addHook('onClose', async () => {
      stopped = true;
      await loop.stop();
    });
  }

  return { runOnce, routes };
}
