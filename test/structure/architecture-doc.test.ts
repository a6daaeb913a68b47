import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/architecture.md's tables of the event hub and of the background loops, and its list of
// app.background's methods, are checked against the code: a listener, a loop or a method added
// or removed without the doc fails here.
const ROOT = join(import.meta.dirname, '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}
const SOURCES = files(join(ROOT, 'src')).map((path) => ({
  path: relative(ROOT, path),
  text: readFileSync(path, 'utf8'),
}));

/** The text of the doc's section `## heading`, up to the next `## `. */
function section(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/architecture.md has a section "${heading}"`).toBeGreaterThan(-1);
  const end = DOC.indexOf('\n## ', start + 1);
  return DOC.slice(start, end === -1 ? undefined : end);
}

/** The room a source file belongs to (src/modules/<room>/…). */
const roomOf = (path: string) => /^src\/modules\/([^/]+)\//.exec(path)?.[1];
/** How the hub table may name a room's listener besides the room's own name. */
const ALIASES: Record<string, string[]> = { runtimes: ['runtimes', 'push dispatcher'] };

describe('docs/architecture.md matches the code', () => {
  it("the event hub's table has a row for every event emitted, naming every room that listens to it", () => {
    const rows = new Map<string, string>();
    for (const line of section('The event hub').split('\n')) {
      const m = /^\| `([a-z]+:[A-Za-z]+)` \|(.*)$/.exec(line);
      if (m?.[1] && m[2]) rows.set(m[1], m[2]);
    }
    const emitted = new Set<string>();
    const listeners: Array<[string, string]> = [];
    for (const { path, text } of SOURCES) {
      for (const m of text.matchAll(/\.emit\('([a-z]+:[A-Za-z]+)'/g)) if (m[1]) emitted.add(m[1]);
      for (const m of text.matchAll(/events\??\.on\('([a-z]+:[A-Za-z]+)'/g)) {
        const room = roomOf(path);
        if (m[1] && room) listeners.push([m[1], room]);
      }
    }
    expect(emitted.size).toBeGreaterThan(0);
    expect([...rows.keys()].sort()).toEqual([...emitted].sort());
    for (const [event, room] of listeners) {
      const who = rows.get(event) ?? '';
      expect(
        (ALIASES[room] ?? [room]).some((name) => who.includes(name)),
        `the row of ${event} names ${room}, which listens to it`,
      ).toBe(true);
    }
  });

  it('the loop table names every file that makes a loop, and each file it names exists', () => {
    const named = new Set<string>();
    for (const line of section('Background loops').split('\n')) {
      const m = /^\| [^|]*\(`([\w/.-]+\.ts)`\)/.exec(line);
      if (m?.[1]) named.add(`src/modules/${m[1]}`);
    }
    const making = SOURCES.filter((s) => s.path !== 'src/lib/loop.ts' && /\bcreateLoop\(/.test(s.text)).map(
      (s) => s.path,
    );
    expect(making.length).toBeGreaterThan(0);
    expect([...named].sort()).toEqual(making.sort());
  });

  it('the section on background work in tests names every method of app.background', () => {
    const app = SOURCES.find((s) => s.path === 'src/app.ts')?.text ?? '';
    const block = /app\.decorate\('background', \{([^}]*)\}/.exec(app)?.[1] ?? '';
    const methods = [...block.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]);
    expect(methods.length).toBeGreaterThan(0);
    const text = section('Background work in tests');
    for (const method of methods) expect(text, `app.background.${method}`).toContain(`\`${method}()\``);
  });
});
