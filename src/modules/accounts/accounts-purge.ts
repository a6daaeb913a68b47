import { ownedBy, type PurgeStep } from '../../db/purge.js';

/** The accounts room's part of purging a deleted workspace: its keys, ingest tokens and signing secrets. */
export const accountsPurge: ReadonlyArray<readonly [string, PurgeStep]> = [
  ['platform_keys', ownedBy('platform_keys', ['uuid'])],
  ['ingest_tokens', ownedBy('ingest_tokens', ['uuid'])],
  ['signing_secrets', ownedBy('signing_secrets', ['uuid'])],
];
