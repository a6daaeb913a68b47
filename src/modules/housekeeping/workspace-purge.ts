import type { AgentPurgeStep, PurgeStep } from '../../db/purge.js';
import { rateLimitsPurge } from '../../http/rate-limit.js';
import { a2aPurge } from '../a2a-server/a2a-purge.js';
import { accountsPurge } from '../accounts/accounts-purge.js';
import { auditRepo } from '../audit/audit-repo.js';
import { mcpOAuthPurge } from '../mcp-oauth/mcp-oauth-repo.js';
import { providersPurge } from '../providers/providers-purge.js';
import { schedulesPurge } from '../schedules/schedules-purge.js';
import { spotlightPurge } from '../spotlight/spotlight-purge.js';
import { tasksPurge } from '../tasks/tasks-purge.js';
import { telemetryPurge } from '../telemetry/telemetry-purge.js';
import { triggersPurge } from '../triggers/triggers-purge.js';
import { workspacesPurge } from '../workspaces/workspaces-purge.js';

/**
 * The order of the purge of a deleted workspace (`DELETE /workspaces/:id` only marks it). Every
 * room owns the statements on its own tables (its `…-purge.ts`); this list only orders them,
 * children before parents, so that no statement cascades into an unbounded number of rows.
 *
 * 1. Agent by agent (`agentsPurge.agentsOf`): `AGENT_STEPS`, then the agent's row.
 * 2. Once no agent is left: `WORKSPACE_STEPS`.
 * 3. Last, the workspace's row (`workspacesPurge.deleteRow`; its memberships cascade).
 */
export const AGENT_STEPS: ReadonlyArray<readonly [string, AgentPurgeStep]> = [
  ...triggersPurge,
  ...schedulesPurge,
  ...a2aPurge,
  ...tasksPurge.ofAgent,
];

export const WORKSPACE_STEPS: ReadonlyArray<readonly [string, PurgeStep]> = [
  ...tasksPurge.ofWorkspace,
  ...telemetryPurge,
  ...spotlightPurge,
  ...providersPurge,
  ...accountsPurge,
  ...mcpOAuthPurge,
  ...workspacesPurge.steps,
  ['audit_log', auditRepo.purgeWorkspace],
  ['rate_limits', rateLimitsPurge],
];
