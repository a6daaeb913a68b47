import { ownedBy, type PurgeStep } from '../../db/purge.js';

/** The providers room's part of purging a deleted workspace: its provider credentials. */
export const providersPurge: ReadonlyArray<readonly [string, PurgeStep]> = [
  ['provider_credentials', ownedBy('provider_credentials', ['uuid'])],
];
