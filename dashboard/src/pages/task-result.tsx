import type { Task } from '../types';

/** A completed task's summary and findings, or a failed task's error. */
export function TaskResult({ task }: { task: Task }) {
  if (task.error)
    return (
      <div class="card failure" role="status">
        <h2>Failed</h2>
        <p>
          <strong class="mono">{task.error.code}</strong> {task.error.message}
        </p>
      </div>
    );
  if (!task.result) return null;
  const findings = task.result.findings ?? [];
  return (
    <div class="result">
      <h2>Result</h2>
      {task.result.summary && <p class="summary">{task.result.summary}</p>}
      {findings.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Findings</caption>
            <thead>
              <tr>
                <th scope="col">Severity</th>
                <th scope="col">File</th>
                <th scope="col" class="num">
                  Line
                </th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {findings.map((f, i) => (
                <tr key={`${f.file}:${f.line}:${i}`}>
                  <td>
                    <span class={`sev sev-${String(f.severity).toLowerCase()}`}>{f.severity}</span>
                  </td>
                  <td class="mono">{f.file}</td>
                  <td class="num">{f.line}</td>
                  <td>{f.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted">No findings.</p>
      )}
    </div>
  );
}
