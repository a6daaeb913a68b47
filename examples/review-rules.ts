/**
 * Deterministic code-review rules for the example worker: no model, just checks a careful
 * reviewer would make on every change. Pure functions, so they are tested directly.
 */

export interface Finding {
  file: string;
  line: number;
  severity: 'error' | 'warning' | 'info';
  message: string;
}

export interface SourceFile {
  file: string;
  /** Lines to review with their line numbers in the new file (all lines, or a diff's added lines). */
  lines: Array<{ line: number; text: string }>;
  /** Whether `lines` is the whole file (function-length checks need the whole body). */
  complete: boolean;
}

const DEBUG_PATTERNS: Array<[RegExp, string]> = [
  [/\bconsole\.(log|debug|trace|dir)\s*\(/, 'leftover console output'],
  [/^\s*debugger\s*;?\s*$/, 'leftover debugger statement'],
  [/^\s*print\s*\(/, 'leftover print() call'],
  [/\bSystem\.out\.print(ln)?\s*\(/, 'leftover System.out output'],
  [/\bfmt\.Print(ln|f)?\s*\(/, 'leftover fmt.Print output'],
  [/\bvar_dump\s*\(|\bdd\s*\(/, 'leftover dump call'],
  [/\bbinding\.pry\b|\bbyebug\b|\bpdb\.set_trace\(\)|\bbreakpoint\(\)/, 'leftover debugger breakpoint'],
];

const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\bAKIA[0-9A-Z]{16}\b/, 'looks like an AWS access key id'],
  [/-----BEGIN (RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----/, 'private key in source'],
  [/\bgh[pousr]_[A-Za-z0-9]{36,}\b/, 'looks like a GitHub token'],
  [/\b(sk|rk)_(live|test)_[A-Za-z0-9]{16,}\b/, 'looks like a Stripe secret key'],
  [/\bxox[baprs]-[A-Za-z0-9-]{10,}\b/, 'looks like a Slack token'],
  [/\bsk_service_[0-9A-Za-z]{49}\b/, 'looks like a taskhook platform key'],
  [/\b(api[_-]?key|secret|password|passwd|token|auth)\b["']?\s*[:=]\s*["'][^"'\s]{12,}["']/i, 'hard-coded credential'],
];

export const MAX_FUNCTION_LINES = 60;
const CONTROL_WORDS = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'else', 'do', 'try']);
export const MAX_LINE_LENGTH = 160;

/** Line-level rules: debug output, TODO/FIXME, secrets, very long lines. */
export function lineFindings(src: SourceFile): Finding[] {
  const out: Finding[] = [];
  for (const { line, text } of src.lines) {
    for (const [re, message] of DEBUG_PATTERNS) {
      if (re.test(text)) out.push({ file: src.file, line, severity: 'warning', message });
    }
    const todo = /\b(TODO|FIXME|XXX|HACK)\b[:\s]?(.*)$/.exec(text);
    if (todo) {
      const note = todo[2]?.trim();
      out.push({
        file: src.file,
        line,
        severity: 'info',
        message: `${todo[1]} left in code${note ? `: ${note}` : ''}`,
      });
    }
    for (const [re, message] of SECRET_PATTERNS) {
      if (re.test(text)) {
        out.push({ file: src.file, line, severity: 'error', message: `${message}; move it to configuration` });
        break;
      }
    }
    if (text.length > MAX_LINE_LENGTH) {
      out.push({ file: src.file, line, severity: 'info', message: `line is ${text.length} characters long` });
    }
  }
  return out;
}

/** Functions longer than MAX_FUNCTION_LINES, by brace matching (C-like) or indentation (Python). */
export function longFunctions(src: SourceFile): Finding[] {
  if (!src.complete) return [];
  const out: Finding[] = [];
  const lines = src.lines;
  const python = src.file.endsWith('.py');
  const start = python
    ? /^(\s*)(async\s+)?def\s+(\w+)/
    : /^\s*(export\s+)?(async\s+)?(function\s*\*?\s*(\w+)|(?:public|private|protected|static|\s)*[\w<>[\],\s]+\s+(\w+)\s*\([^;]*\)\s*(\{|throws)|(const|let|var)\s+(\w+)\s*=\s*(async\s*)?(\([^)]*\)|\w+)\s*=>\s*\{|func\s+(\([^)]*\)\s*)?(\w+))/;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]?.text ?? '';
    const m = start.exec(text);
    if (!m) continue;
    const name = python ? m[3] : (m[4] ?? m[5] ?? m[8] ?? m[12] ?? 'function');
    // `} else if (x) {` and friends look like a method header to the pattern above.
    if (name && CONTROL_WORDS.has(name)) continue;
    let end = i;
    if (python) {
      const indent = (m[1] ?? '').length;
      for (let j = i + 1; j < lines.length; j++) {
        const t = lines[j]?.text ?? '';
        if (t.trim() === '') continue;
        if (t.length - t.trimStart().length <= indent) break;
        end = j;
      }
    } else {
      let depth = 0;
      let opened = false;
      for (let j = i; j < lines.length; j++) {
        for (const ch of (lines[j]?.text ?? '').replace(/(["'`])(?:\\.|(?!\1).)*\1/g, '')) {
          if (ch === '{') {
            depth++;
            opened = true;
          } else if (ch === '}') depth--;
        }
        end = j;
        if (opened && depth <= 0) break;
      }
    }
    const length = end - i + 1;
    if (length > MAX_FUNCTION_LINES) {
      out.push({
        file: src.file,
        line: lines[i]?.line ?? i + 1,
        severity: 'warning',
        message: `function ${name} is ${length} lines long (over ${MAX_FUNCTION_LINES}); consider splitting it`,
      });
    }
  }
  return out;
}

/** True when the text is a unified diff (git diff, diff -u). */
export function isUnifiedDiff(text: string): boolean {
  return /^(diff --git |--- .+\n\+\+\+ |@@ -\d+(,\d+)? \+\d+(,\d+)? @@)/m.test(text);
}

/** The added lines of each file of a unified diff, with their line numbers in the new file. */
export function parseUnifiedDiff(text: string): SourceFile[] {
  const files: SourceFile[] = [];
  let current: SourceFile | null = null;
  let newLine = 0;
  let previous = '';
  for (const raw of text.split(/\r?\n/)) {
    // A file header is `--- old` then `+++ new`; an added line `++ x` also starts with `+++ `.
    const header = raw.startsWith('+++ ') && (previous.startsWith('--- ') || !current);
    previous = raw;
    if (header) {
      const name = raw.slice(4).replace(/^b\//, '').split('\t')[0] ?? 'unknown';
      current = { file: name, lines: [], complete: false };
      if (name !== '/dev/null') files.push(current);
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(raw);
    if (hunk) {
      newLine = Number(hunk[1]);
      continue;
    }
    if (!current || raw.startsWith('--- ') || raw.startsWith('diff --git') || raw.startsWith('index ')) continue;
    if (raw.startsWith('+')) {
      current.lines.push({ line: newLine, text: raw.slice(1) });
      newLine++;
    } else if (raw.startsWith(' ') || raw === '') {
      // An empty line is a context line whose trailing space was stripped (editors, e-mail, chat).
      newLine++;
    }
  }
  return files;
}

/** True when the text looks like source code rather than a request in prose. */
export function looksLikeCode(text: string): boolean {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length === 0) return false;
  const codeish = lines.filter((l) =>
    /[;{}()=]|^\s*(def|class|import|from|function|const|let|var|#include|package)\b/.test(l),
  );
  return codeish.length / lines.length >= 0.3 && lines.length >= 2;
}

/** Reviews a diff or a whole source file; `fileName` names a whole file. */
export function review(text: string, fileName = 'input'): { files: number; findings: Finding[] } {
  const sources: SourceFile[] = isUnifiedDiff(text)
    ? parseUnifiedDiff(text)
    : [{ file: fileName, lines: text.split(/\r?\n/).map((t, i) => ({ line: i + 1, text: t })), complete: true }];
  const findings = sources.flatMap((s) => [...lineFindings(s), ...longFunctions(s)]);
  findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  return { files: sources.length, findings };
}

/** A one-line summary of the findings. */
export function summarize(files: number, findings: Finding[]): string {
  if (findings.length === 0) return `Reviewed ${files} file(s): no findings.`;
  const by = (s: Finding['severity']) => findings.filter((f) => f.severity === s).length;
  return `Reviewed ${files} file(s): ${findings.length} finding(s) (${by('error')} error, ${by('warning')} warning, ${by('info')} info).`;
}
