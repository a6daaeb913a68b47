/**
 * The structured result every push runtime may read from an agent's answer: `{summary, findings}`
 * (a model's JSON text, an A2A data part). Neutral ground for the port and the adapters.
 */

/** One finding of a result. */
export interface Finding {
  file: string;
  line: number;
  severity: string;
  message: string;
}

const isFinding = (f: unknown): f is Finding => {
  const o = f as Record<string, unknown>;
  return (
    typeof f === 'object' &&
    f !== null &&
    !Array.isArray(f) &&
    typeof o.file === 'string' &&
    typeof o.line === 'number' &&
    typeof o.severity === 'string' &&
    typeof o.message === 'string'
  );
};

/**
 * `{summary, findings}` of a value of that shape (an object whose `summary` is a string and whose
 * `findings` are all findings; other keys dropped), else null. The rule every runtime uses to read
 * an agent's structured result (a model's JSON text, an A2A data part).
 */
export function findingsResultOf(value: unknown): { summary: string; findings: Finding[] } | null {
  const o = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  if (typeof o.summary !== 'string' || !Array.isArray(o.findings) || !o.findings.every(isFinding)) return null;
  const findings = (o.findings as Finding[]).map(({ file, line, severity, message }) => ({
    file,
    line,
    severity,
    message,
  }));
  return { summary: o.summary, findings };
}
