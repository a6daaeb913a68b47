import { useState } from 'preact/hooks';
import { AUDIT_ACTIONS as ACTIONS } from '../../../src/modules/audit/audit-actions.js';
import { api } from '../api';
import { dateTime } from '../format';
import type { AuditEntry } from '../types';
import { Empty, ErrorBox, PageTitle, useAction, useLoad } from '../ui';
import { roleAtLeast, useWorkspace } from '../workspace';

function Actor({ actor }: { actor: AuditEntry['actor'] }) {
  if (actor.type === 'key')
    return (
      <span>
        <span class="muted small">key </span>
        {actor.name}
      </span>
    );
  return <span>{actor.email}</span>;
}

function Details({ details }: { details: Record<string, unknown> }) {
  const entries = Object.entries(details ?? {});
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <dl class="audit-details">
      {entries.map(([key, value]) => (
        <div key={key}>
          <dt>{key}</dt>
          <dd>{Array.isArray(value) ? value.join(', ') : typeof value === 'string' ? value : JSON.stringify(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

function AuditTable({ entries }: { entries: AuditEntry[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col" class="wide-only">
              Target
            </th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id} data-audit-id={e.id}>
              <td class="nowrap">
                <time dateTime={e.at}>{dateTime(e.at)}</time>
              </td>
              <td>
                <Actor actor={e.actor} />
              </td>
              <td class="mono">{e.action}</td>
              <td class="wide-only small">
                {e.target.type} <span class="mono muted">{e.target.uuid.slice(0, 8)}</span>
              </td>
              <td>
                <Details details={e.details} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The audit log of the current workspace (admins and owners), newest first, a page at a time. */
export function AuditLogPage() {
  const { current: ws } = useWorkspace();
  const [action, setAction] = useState('');
  const allowed = ws !== null && roleAtLeast(ws.role, 'admin');
  const first = useLoad(
    () => (allowed && ws ? api.auditLog(ws.uuid, undefined, action || undefined) : Promise.resolve(null)),
    [ws?.uuid, allowed, action],
  );
  const [more, setMore] = useState<{ entries: AuditEntry[]; next: string | null; after: unknown } | null>(null);
  const loading = useAction();
  // Pages loaded with "Load more" belong to the first page they followed.
  const extra = more && more.after === first.data ? more : null;
  const entries = [...(first.data?.entries ?? []), ...(extra?.entries ?? [])];
  const next = extra ? extra.next : (first.data?.next_cursor ?? null);

  if (!allowed || !ws) {
    return (
      <section>
        <PageTitle title="Audit log">Audit log</PageTitle>
        <p class="notice">The audit log is open to admins and owners of a workspace.</p>
      </section>
    );
  }
  return (
    <section>
      <div class="page-head">
        <PageTitle title="Audit log">Audit log of {ws.name}</PageTitle>
        <label class="inline">
          Action
          <select value={action} onChange={(e) => setAction(e.currentTarget.value)}>
            <option value="">All actions</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p class="muted small">Every change to this workspace's agents, triggers, keys, members and settings.</p>
      <ErrorBox error={first.error ?? loading.error} />
      {first.data && entries.length === 0 && <Empty title="Nothing recorded yet" />}
      {entries.length > 0 && <AuditTable entries={entries} />}
      {next && (
        <button
          type="button"
          class="load-more"
          disabled={loading.busy}
          onClick={() =>
            loading.run(async () => {
              const page = await api.auditLog(ws.uuid, next, action || undefined);
              setMore({
                entries: [...(extra?.entries ?? []), ...page.entries],
                next: page.next_cursor,
                after: first.data,
              });
            })
          }
        >
          Load more
        </button>
      )}
    </section>
  );
}
