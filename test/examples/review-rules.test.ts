import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Finding,
  isUnifiedDiff,
  lineFindings,
  longFunctions,
  looksLikeCode,
  MAX_FUNCTION_LINES,
  MAX_LINE_LENGTH,
  parseUnifiedDiff,
  review,
  type SourceFile,
  summarize,
} from '../../examples/review-rules.js';

/** A whole file of these lines, numbered from 1. */
function file(name: string, lines: string[]): SourceFile {
  return { file: name, lines: lines.map((text, i) => ({ line: i + 1, text })), complete: true };
}

/** Findings of one line of code, as line 7 of a.ts. */
function findingsOf(text: string): Finding[] {
  return lineFindings({ file: 'a.ts', lines: [{ line: 7, text }], complete: false });
}

const TWO_FILE_DIFF = [
  'diff --git a/src/app.ts b/src/app.ts',
  'index 83db48f..bf269f4 100644',
  '--- a/src/app.ts',
  '+++ b/src/app.ts',
  '@@ -1,4 +1,5 @@',
  ' import x from "x";',
  '+import y from "y";',
  ' ',
  '-const a = 1;',
  '+const a = 2;',
  ' export default a;',
  '@@ -40,3 +41,4 @@ function later() {',
  ' keep();',
  '-drop();',
  '+added41();',
  '+added42();',
  ' keep();',
  'diff --git a/lib/util.py b/lib/util.py',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/lib/util.py',
  '@@ -0,0 +1,2 @@',
  '+def f():',
  '+    return 1',
  'diff --git a/old.ts b/old.ts',
  'deleted file mode 100644',
  '--- a/old.ts',
  '+++ /dev/null',
  '@@ -1,2 +0,0 @@',
  '-console.log("gone");',
  '-// TODO gone',
  '',
].join('\n');

describe('the sample diff the README walkthrough submits (examples/change.diff)', () => {
  it('is a unified diff in which the rules find a credential, console output and a TODO', () => {
    const text = readFileSync(new URL('../../examples/change.diff', import.meta.url), 'utf8');
    expect(isUnifiedDiff(text)).toBe(true);
    const { files, findings } = review(text);
    expect(files).toBe(1);
    expect(findings.map((f) => [f.line, f.severity])).toEqual([
      [3, 'error'],
      [11, 'warning'],
      [13, 'info'],
    ]);
  });
});

describe('parseUnifiedDiff', () => {
  it('gives added lines their new-file line numbers across hunks and files, and skips deleted files', () => {
    expect(isUnifiedDiff(TWO_FILE_DIFF)).toBe(true);
    expect(parseUnifiedDiff(TWO_FILE_DIFF)).toEqual([
      {
        file: 'src/app.ts',
        complete: false,
        lines: [
          { line: 2, text: 'import y from "y";' },
          { line: 4, text: 'const a = 2;' },
          { line: 42, text: 'added41();' },
          { line: 43, text: 'added42();' },
        ],
      },
      {
        file: 'lib/util.py',
        complete: false,
        lines: [
          { line: 1, text: 'def f():' },
          { line: 2, text: '    return 1' },
        ],
      },
    ]);
  });

  it('reads diff -u headers with timestamps, CRLF line ends and hunks without counts', () => {
    const diff = ['--- a.js\t2024-01-01 10:00:00', '+++ a.js\t2024-01-02 10:00:00', '@@ -3 +3 @@', '-old', '+new'].join(
      '\r\n',
    );
    expect(parseUnifiedDiff(diff)).toEqual([{ file: 'a.js', complete: false, lines: [{ line: 3, text: 'new' }] }]);
  });

  it('counts a context line whose leading space was stripped (pasted diffs)', () => {
    const diff = ['--- a/a.ts', '+++ b/a.ts', '@@ -1,3 +1,4 @@', ' one', '', '+three', ' four'].join('\n');
    expect(parseUnifiedDiff(diff)[0]?.lines).toEqual([{ line: 3, text: 'three' }]);
  });

  it('takes an added line that starts with "++ " as content, not as a new file', () => {
    const diff = ['--- a/a.c', '+++ b/a.c', '@@ -1,1 +1,3 @@', ' x;', '+++ counter;', '+y;'].join('\n');
    expect(parseUnifiedDiff(diff)).toEqual([
      {
        file: 'a.c',
        complete: false,
        lines: [
          { line: 2, text: '++ counter;' },
          { line: 3, text: 'y;' },
        ],
      },
    ]);
  });

  it.each([
    ['a whole source file', 'const a = 1;\nconsole.log(a);\n'],
    ['prose', 'please review my code'],
    ['a line with three dashes', '--- not a header'],
  ])('isUnifiedDiff is false for %s', (_name, text) => {
    expect(isUnifiedDiff(text)).toBe(false);
  });
});

describe('line rules', () => {
  it.each([
    ['console.log', 'console.log("x", y);', 'warning', 'leftover console output'],
    ['console.debug', '  console.debug(x)', 'warning', 'leftover console output'],
    ['print()', '    print("hello")', 'warning', 'leftover print() call'],
    ['debugger', '  debugger;', 'warning', 'leftover debugger statement'],
    ['pdb', 'import pdb; pdb.set_trace()', 'warning', 'leftover debugger breakpoint'],
    ['System.out', 'System.out.println("x");', 'warning', 'leftover System.out output'],
    ['fmt.Println', 'fmt.Println(x)', 'warning', 'leftover fmt.Print output'],
    ['TODO with a note', '// TODO: handle the empty case', 'info', 'TODO left in code: handle the empty case'],
    ['FIXME with a note', '# FIXME off by one', 'info', 'FIXME left in code: off by one'],
    ['TODO without a note', '// TODO', 'info', 'TODO left in code'],
    [
      'an AWS access key id',
      'const id = "AKIAIOSFODNN7EXAMPLE";',
      'error',
      'looks like an AWS access key id; move it to configuration',
    ],
    [
      'a GitHub token',
      `token: ghp_${'a1B2c3D4e5'.repeat(4)}`,
      'error',
      'looks like a GitHub token; move it to configuration',
    ],
    [
      'a Stripe live key',
      'stripe(sk_live_4eC39HqLyjWDarjtT1zdp7dc)',
      'error',
      'looks like a Stripe secret key; move it to configuration',
    ],
    [
      'a private key header',
      '-----BEGIN RSA PRIVATE KEY-----',
      'error',
      'private key in source; move it to configuration',
    ],
    [
      'an OpenSSH private key header',
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'error',
      'private key in source; move it to configuration',
    ],
    [
      'a hard-coded password',
      'password = "correct-horse-battery"',
      'error',
      'hard-coded credential; move it to configuration',
    ],
    ['a hard-coded api key', "apiKey: 'abcdef0123456789'", 'error', 'hard-coded credential; move it to configuration'],
  ])('reports %s', (_name, text, severity, message) => {
    expect(findingsOf(text)).toEqual([{ file: 'a.ts', line: 7, severity, message }]);
  });

  it.each([
    ['a log call on a logger', 'logger.info("started");'],
    ['a word containing print', 'const printer = reprint(x);'],
    ['a password read from configuration', 'const password = process.env.DB_PASSWORD;'],
    ['a short placeholder password', 'password = "changeme"'],
    ['a Stripe publishable key', 'pk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    ['an AWS-like id that is too short', 'AKIA1234'],
    ['a word containing todo', 'const todos = [];'],
    [`a line of exactly ${MAX_LINE_LENGTH} characters`, 'x'.repeat(MAX_LINE_LENGTH)],
  ])('does not report %s', (_name, text) => {
    expect(findingsOf(text)).toEqual([]);
  });

  it('reports a line over the length limit with its length', () => {
    const text = `const s = "${'x'.repeat(MAX_LINE_LENGTH)}";`;
    expect(findingsOf(text)).toEqual([
      { file: 'a.ts', line: 7, severity: 'info', message: `line is ${text.length} characters long` },
    ]);
  });

  it('reports one secret per line, and every other rule that applies', () => {
    const text = 'console.log("AKIAIOSFODNN7EXAMPLE", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"); // TODO rotate';
    expect(findingsOf(text).map((f) => f.message)).toEqual([
      'leftover console output',
      'TODO left in code: rotate',
      'looks like an AWS access key id; move it to configuration',
    ]);
  });
});

describe('longFunctions', () => {
  const body = (n: number, indent: string) => Array.from({ length: n }, (_, i) => `${indent}step(${i});`);
  const tsFunction = (name: string, total: number) => [
    `export async function ${name}(a: number) {`,
    ...body(total - 2, '  '),
    '}',
  ];
  const pyFunction = (name: string, total: number) => [`def ${name}(a):`, ...body(total - 1, '    ')];

  it.each([
    ['TypeScript function', 'a.ts', tsFunction('tooLong', MAX_FUNCTION_LINES + 1), 'tooLong'],
    [
      'TypeScript arrow function',
      'a.ts',
      ['const handler = async (req) => {', ...body(MAX_FUNCTION_LINES, '  '), '};'],
      'handler',
    ],
    ['Python function', 'a.py', pyFunction('too_long', MAX_FUNCTION_LINES + 1), 'too_long'],
    ['Go function', 'a.go', ['func (s *Server) Serve() {', ...body(MAX_FUNCTION_LINES, '\t'), '}'], 'Serve'],
  ])('reports a %s over the limit at its first line', (_kind, name, lines, fn) => {
    const src = file(name, ['// header', '', ...lines, '']);
    const length = lines.length;
    expect(longFunctions(src)).toEqual([
      {
        file: name,
        line: 3,
        severity: 'warning',
        message: `function ${fn} is ${length} lines long (over ${MAX_FUNCTION_LINES}); consider splitting it`,
      },
    ]);
  });

  it.each([
    ['TypeScript', 'a.ts', tsFunction('justRight', MAX_FUNCTION_LINES)],
    ['Python', 'a.py', pyFunction('just_right', MAX_FUNCTION_LINES)],
  ])('does not report a %s function of exactly the limit', (_kind, name, lines) => {
    expect(longFunctions(file(name, [...lines, '']))).toEqual([]);
  });

  it('ends a Python method at the first line indented no deeper than its def, blank lines aside', () => {
    const lines = [
      'class A:',
      '    def short(self):',
      ...body(MAX_FUNCTION_LINES - 5, '        '),
      '',
      '    def second(self):',
      ...body(MAX_FUNCTION_LINES / 2, '        '),
      '',
      ...body(MAX_FUNCTION_LINES / 2, '        '),
      'x = 1',
    ];
    expect(longFunctions(file('a.py', lines))).toEqual([
      {
        file: 'a.py',
        line: MAX_FUNCTION_LINES - 1,
        severity: 'warning',
        message: `function second is ${MAX_FUNCTION_LINES + 2} lines long (over ${MAX_FUNCTION_LINES}); consider splitting it`,
      },
    ]);
  });

  it('ignores braces inside strings when matching a function body', () => {
    const lines = ['function f() {', '  const s = "}}}";', ...body(MAX_FUNCTION_LINES, '  '), '}'];
    expect(longFunctions(file('a.ts', lines))).toHaveLength(1);
  });

  it('does nothing for the added lines of a diff (the whole body is not known)', () => {
    const src = file('a.ts', tsFunction('tooLong', MAX_FUNCTION_LINES + 10));
    expect(longFunctions({ ...src, complete: false })).toEqual([]);
  });
});

describe('looksLikeCode', () => {
  it.each([
    ['please review my code'],
    ['Could you have a look at the login page?\nIt feels slow to me and I do not know why.'],
    ['Hi,\n\nthanks for the help last week.\nThe report is attached.\nBest, Ann'],
    [''],
    ['const a = 1;'],
  ])('is false for %j', (text) => {
    expect(looksLikeCode(text)).toBe(false);
  });

  it.each([
    ['function add(a, b) {\n  return a + b;\n}'],
    ['import os\n\ndef main():\n    print(os.getcwd())\n'],
    ['#include <stdio.h>\nint main(void) { return 0; }'],
    ['Here is my code:\nconst x = 1;\nconsole.log(x);'],
  ])('is true for %j', (text) => {
    expect(looksLikeCode(text)).toBe(true);
  });
});

describe('review', () => {
  it('reviews every line of a whole file, named by fileName, sorted by line', () => {
    const text = [
      'const key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";',
      'export function f() {',
      '  // TODO: tidy up',
      '  console.log(key);',
      '}',
    ].join('\n');
    expect(review(text, 'src/pay.ts')).toEqual({
      files: 1,
      findings: [
        {
          file: 'src/pay.ts',
          line: 1,
          severity: 'error',
          message: 'looks like a Stripe secret key; move it to configuration',
        },
        { file: 'src/pay.ts', line: 3, severity: 'info', message: 'TODO left in code: tidy up' },
        { file: 'src/pay.ts', line: 4, severity: 'warning', message: 'leftover console output' },
      ],
    });
    expect(review('console.log(1);\n').findings[0]?.file).toBe('input');
  });

  it('checks only the added lines of a diff, sorted by file then line', () => {
    const diff = [
      '--- a/z.ts',
      '+++ b/z.ts',
      '@@ -10,3 +10,3 @@',
      ' console.log("context: not new");',
      '-// TODO removed',
      '+// FIXME added',
      ' debugger;',
      '--- a/a.py',
      '+++ b/a.py',
      '@@ -1,2 +1,3 @@',
      ' x = 1',
      '+print(x)',
      ' y = 2',
    ].join('\n');
    expect(review(diff, 'ignored.ts')).toEqual({
      files: 2,
      findings: [
        { file: 'a.py', line: 2, severity: 'warning', message: 'leftover print() call' },
        { file: 'z.ts', line: 11, severity: 'info', message: 'FIXME left in code: added' },
      ],
    });
  });

  it('finds nothing in clean code', () => {
    expect(review('export const add = (a: number, b: number) => a + b;\n', 'add.ts')).toEqual({
      files: 1,
      findings: [],
    });
  });

  it('never throws, and reports only lines that exist, on arbitrary text', () => {
    const pieces = fc.constantFrom(
      '\n',
      '\r\n',
      ' ',
      '+',
      '-',
      '--- a/x.ts',
      '+++ b/x.ts',
      '+++ /dev/null',
      '@@ -1,2 +3,4 @@',
      'diff --git a/x b/x',
      'function f() {',
      'def g():',
      '}',
      '{',
      '"',
      'console.log(1)',
      'TODO',
      'AKIAIOSFODNN7EXAMPLE',
    );
    const text = fc.oneof(
      fc.string({ maxLength: 400 }),
      fc.array(pieces, { maxLength: 80 }).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(text, fc.string({ maxLength: 20 }), (input, name) => {
        const { files, findings } = review(input, name);
        const lines = input.split(/\r?\n/);
        if (isUnifiedDiff(input)) {
          // At most one file per `+++ ` header.
          expect(files).toBeLessThanOrEqual(lines.filter((l) => l.startsWith('+++ ')).length);
        } else {
          // A whole file: itself, and findings only on its lines.
          expect(files).toBe(1);
          for (const f of findings) expect(f.line >= 1 && f.line <= lines.length).toBe(true);
        }
        for (const f of findings) {
          expect(Number.isInteger(f.line)).toBe(true);
          expect(['error', 'warning', 'info']).toContain(f.severity);
        }
        expect(typeof summarize(files, findings)).toBe('string');
      }),
      { numRuns: 500 },
    );
  });
});

describe('summarize', () => {
  const f = (severity: Finding['severity']): Finding => ({ file: 'a', line: 1, severity, message: 'm' });

  it.each([
    [1, [], 'Reviewed 1 file(s): no findings.'],
    [2, [f('error')], 'Reviewed 2 file(s): 1 finding(s) (1 error, 0 warning, 0 info).'],
    [
      3,
      [f('error'), f('warning'), f('warning'), f('info')],
      'Reviewed 3 file(s): 4 finding(s) (1 error, 2 warning, 1 info).',
    ],
  ])('summarises %i file(s) with %j', (files, findings, expected) => {
    expect(summarize(files, findings)).toBe(expected);
  });
});
