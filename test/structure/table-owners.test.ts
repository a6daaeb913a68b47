import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// "All SQL on a room's tables lives in that room": code outside the owning room never names these
// tables in a query. docs/architecture.md ("What other rooms may touch") lists the exceptions and why.
const ROOT = join(import.meta.dirname, '..', '..');
const OWNERS: Record<string, string> = {
  tasks: 'src/modules/tasks/',
  task_events: 'src/modules/tasks/',
  agent_event_seqs: 'src/modules/tasks/',
  agents: 'src/modules/agents/',
  workspaces: 'src/modules/workspaces/',
};
/** file → tables it may name outside their room; each is written, with its reason, in docs/architecture.md. */
const EXCEPTIONS: Record<string, readonly string[]> = {
  'src/modules/accounts/memberships-repo.ts': ['workspaces'],
  'src/modules/accounts/credentials-repo.ts': ['workspaces'],
  'src/modules/triggers/triggers-repo.ts': ['agents', 'workspaces'],
  'src/modules/tasks/queue/queue-repo.ts': ['agents'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const NAMES = Object.keys(OWNERS).join('|');
const PATTERNS = [
  // Kysely: .selectFrom('tasks'), .innerJoin('agents as a', …), .deleteFrom(['tasks', …]), sql.table('tasks')
  new RegExp(
    `\\b(selectFrom|deleteFrom|updateTable|insertInto|replaceInto|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin|crossJoin|with|table|ref)\\(\\s*\\[?\\s*['"\`](${NAMES})(\\s+as\\s+\\w+)?['"\`]`,
    'g',
  ),
  // A helper handed an executor and a table name: deleteLimited(ex, 'tasks', …), ownedBy('tasks', …)
  new RegExp(`\\b(deleteLimited|ownedBy|owned|ofAgents)\\(\\s*(\\w+\\s*,\\s*)?['"](${NAMES})['"]`, 'g'),
  // Raw SQL: from/join/into/update <table>
  new RegExp(`\`[^\`]*\\b(from|join|into|update|table)\\s+"?(${NAMES})"?\\b[^\`]*\``, 'gi'),
];

/** Every (file, table) named outside its room, as `file: table`. */
function offenders(): string[] {
  const found = new Set<string>();
  for (const path of files(join(ROOT, 'src'))) {
    const file = relative(ROOT, path);
    if (file.startsWith('src/db/migrations/')) continue; // the schema's own history
    const text = readFileSync(path, 'utf8');
    for (const pattern of PATTERNS) {
      for (const match of text.matchAll(pattern)) {
        const table = Object.keys(OWNERS).find((t) => new RegExp(`['"\`\\s]${t}['"\`\\s]`).test(` ${match[0]} `));
        if (!table || file.startsWith(OWNERS[table] as string)) continue;
        if (EXCEPTIONS[file]?.includes(table)) continue;
        found.add(`${file}: ${table}`);
      }
    }
  }
  return [...found].sort();
}

describe('table owners', () => {
  it('no code outside its room names tasks, task_events, agents or workspaces in a query', () => {
    expect(offenders()).toEqual([]);
  });

  it('finds a query that breaks the rule (the check can fail)', () => {
    const sample = [
      "ex.selectFrom('tasks').select('uuid')",
      "ex\n  .innerJoin('agents as a', 'a.uuid', 't.agent_uuid')",
      'sql`delete from task_events where seq = 1`',
      "deleteLimited(ex, 'workspaces', ['uuid'], from)",
    ];
    for (const text of sample) {
      expect(
        PATTERNS.some((p) => [...text.matchAll(p)].length > 0),
        text,
      ).toBe(true);
    }
    expect(PATTERNS.some((p) => [..."config: { feature: 'agents' }".matchAll(p)].length > 0)).toBe(false);
  });

  it('every written exception is still needed', () => {
    for (const [file, tables] of Object.entries(EXCEPTIONS)) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const table of tables) expect(text, `${file}: ${table}`).toMatch(new RegExp(`'${table}( as \\w+)?'`));
    }
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    for (const file of Object.keys(EXCEPTIONS)) expect(doc, file).toContain(file.replace('src/modules/', ''));
  });
});
