// The registry this project installs from serves only the current platform's builds of some
// packages (e.g. @biomejs/cli-win32-x64, @rollup/rollup-darwin-arm64 answer 404), so npm leaves
// them out of package-lock.json, and `npm ci` then refuses the lock as out of sync. This adds the
// missing optional platform packages back (version, os, cpu: what npm itself records), so `npm ci`
// accepts the lock and skips them on platforms they are not for. Run after `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'sunos', 'win32', 'aix', 'netbsd', 'openharmony'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'riscv64', 'ppc64', 's390x', 'loong64', 'mips64el'];

let added = 0;
for (const [where, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const path = `node_modules/${name}`;
    const nested = `${where}/node_modules/${name}`;
    if (lock.packages[path] || lock.packages[nested]) continue;
    const parts = name.split('/').pop().split('-');
    const entry = { version, optional: true };
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.find((p) => CPU.includes(p) || p === 'arm64' || p === 'x64');
    if (os) entry.os = [os];
    if (cpu) entry.cpu = [cpu];
    if (parts.includes('musl')) entry.libc = ['musl'];
    if (parts.includes('gnu') || parts.includes('gnueabihf')) entry.libc = ['glibc'];
    lock.packages[path] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: ${added} optional platform package(s) added`);
