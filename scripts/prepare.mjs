// npm's `prepare`: runs after `npm ci` and `npm install`, and again the first time `npx taskhook`
// is called in a clone, when npm installs this checkout into its exec cache. Measured on two busy
// cores, that first call took 39 s of CPU (163 s of wall time under load), most of it this build
// again although nothing had changed; later calls took 2.5 s of CPU. So the build is skipped when
// the stamp it leaves in dist/ is newer than every file it is made from (a checkout or an edit makes
// them newer). `npm run build` always builds.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = path.join(root, 'dist', '.prepare-stamp');
const SOURCES = [
  'src',
  'dashboard',
  'sdks/typescript/src',
  'sdks/typescript/package.json',
  'sdks/typescript/tsconfig.json',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
];

function newest(file) {
  if (!existsSync(file)) return 0;
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let max = stat.mtimeMs;
  for (const entry of readdirSync(file)) max = Math.max(max, newest(path.join(file, entry)));
  return max;
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const sources = Math.max(...SOURCES.map((s) => newest(path.join(root, s))));
if (built > sources) {
  console.log('prepare: dist/ is newer than every source, the build is skipped (npm run build forces it)');
} else {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

// npm writes node_modules/.package-lock.json when it installs, and `npm exec` trusts that record
// only while no folder of the tree is newer than it; otherwise it reads the whole tree from disk.
// The build writes into the tree without changing any package (the SDK's dist/ inside the linked
// workspace sdks/typescript, Vite's .vite-temp folder), so the record is still true: mark it current.
const record = path.join(root, 'node_modules', '.package-lock.json');
if (existsSync(record)) {
  const now = new Date();
  utimesSync(record, now, now);
}
