import { ownedBy, type PurgeStep } from '../../db/purge.js';

/**
 * The model proxy's part of purging a deleted workspace: its call records, spend totals, budgets
 * and limits (the workspace's, its agents' and its keys' all carry its uuid), and its routes.
 */
export const spotlightPurge: ReadonlyArray<readonly [string, PurgeStep]> = [
  ['spotlight_calls', ownedBy('spotlight_calls', ['uuid'])],
  ['spotlight_spend', ownedBy('spotlight_spend', ['workspace_uuid', 'scope', 'scope_id', 'window_start'])],
  ['spotlight_budgets', ownedBy('spotlight_budgets', ['workspace_uuid', 'scope', 'scope_id'])],
  ['spotlight_rate_limits', ownedBy('spotlight_rate_limits', ['workspace_uuid', 'scope', 'scope_id'])],
  ['spotlight_routes', ownedBy('spotlight_routes', ['uuid'])],
];
