// Runs at the end of `prepare` (after `npm ci` or `npm install` and the build).
//
// npm writes node_modules/.package-lock.json when it installs, and `npm exec` (`npx taskhook`) trusts
// that record only while no folder of the tree is newer than it; otherwise it reads the whole tree
// from disk, which took 40 s of CPU on a two-core machine for every `npx taskhook`. The build that
// `prepare` runs after the install writes into the tree without changing any package: the SDK's
// dist/ inside the linked workspace sdks/typescript, and Vite's .vite-temp folder. So the record is
// still true, and this marks it current again. Nothing happens when npm wrote no record.
import { existsSync, utimesSync } from 'node:fs';

const record = new URL('../node_modules/.package-lock.json', import.meta.url);
if (existsSync(record)) {
  const now = new Date();
  utimesSync(record, now, now);
}
