import { useState } from 'preact/hooks';
import { api } from '../api';
import type { Budget, BudgetWindow } from '../types';
import { ErrorBox, Link, PageTitle, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';

type Field = 'monthly_usd' | 'daily_usd' | 'per_task_usd';
const FIELDS: Record<Budget['scope'], Field[]> = {
  account: ['monthly_usd'],
  platform_key: ['monthly_usd'],
  agent: ['daily_usd', 'per_task_usd'],
  task: [],
};
const LABELS: Record<Field, string> = {
  monthly_usd: 'Per month (USD)',
  daily_usd: 'Per day (USD)',
  per_task_usd: 'Per task (USD)',
};

const usd = (n: number | null | undefined) => (n === null || n === undefined ? 'no limit' : `$${n}`);

/** One window as a bar: spent against the limit (a full bar once the limit is reached). */
function WindowBar({ label, w }: { label: string; w: BudgetWindow }) {
  const max = w.limit_usd ?? 0;
  return (
    <div class="progress">
      <div class="progress-label">
        <span>{label}</span>
        <span>
          {`$${w.spent_usd} spent of ${usd(w.limit_usd)}`}
          {w.exceeded ? ' · limit reached: calls are refused' : ''}
        </span>
      </div>
      {w.limit_usd !== null && (
        <progress max={max > 0 ? max : 1} value={max > 0 ? Math.min(w.spent_usd, max) : 1} aria-label={label} />
      )}
    </div>
  );
}

/** Inline editor of one scope's limits (admins): blank means no limit. */
function LimitsForm(props: { budget: Budget; path: string; onDone(): void; onClose(): void }) {
  const fields = FIELDS[props.budget.scope];
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(fields.map((f) => [f, String(props.budget.limits[f] ?? '')])),
  );
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const body = Object.fromEntries(fields.map((f) => [f, values[f] === '' ? null : Number(values[f])]));
    void action
      .run(() => api.setBudget(props.path, body))
      .then((ok) => {
        if (!ok) return;
        props.onDone();
        props.onClose();
      });
  };
  return (
    <form class="form" onSubmit={submit}>
      {fields.map((f) => (
        <label key={f}>
          {LABELS[f]}
          <input
            type="number"
            min="0"
            max="1000000"
            step="any"
            placeholder="no limit"
            value={values[f]}
            onInput={(e) => setValues({ ...values, [f]: e.currentTarget.value })}
          />
        </label>
      ))}
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          Save limits
        </button>
        <button type="button" class="ghost" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function title(b: Budget, names: Map<string, string>) {
  if (b.scope === 'account') return 'Whole workspace';
  const name = names.get(b.id ?? '') ?? b.id?.slice(0, 8);
  if (b.scope === 'agent') return <Link href={`/agents/${b.id}`}>{`Agent ${name}`}</Link>;
  return `Platform key ${name}`;
}

const pathOf = (b: Budget) =>
  b.scope === 'account' ? 'account' : `${b.scope === 'agent' ? 'agents' : 'platform_keys'}/${b.id}`;

/**
 * Model budgets: what each scope (the workspace, agents, platform keys) spent in its current
 * window against its limit. Admins edit limits; others only read.
 */
export function BudgetsPage() {
  const list = useLoad(() => api.budgets(), []);
  const agents = useLoad(() => api.agents().catch(() => ({ agents: [] })), []);
  const manage = useCan('admin');
  const [editing, setEditing] = useState<string | null>(null);
  const [newAgent, setNewAgent] = useState('');
  const names = new Map((agents.data?.agents ?? []).map((a) => [a.uuid, a.name] as const));
  const budgets = list.data?.budgets ?? [];
  const unlimited = (agents.data?.agents ?? []).filter((a) => !budgets.some((b) => b.id === a.uuid));
  return (
    <section>
      <div class="page-head">
        <PageTitle title="Budgets">Budgets</PageTitle>
      </div>
      <p class="muted small">
        Spending limits on model calls through the proxy, in US dollars. A call is refused (429 budget_exceeded) once a
        limit it counts against is reached; a call already running finishes.
      </p>
      <ErrorBox error={list.error} />
      {budgets.map((b) => {
        const path = pathOf(b);
        return (
          <div class="card" key={path} data-budget={b.scope}>
            <h2>{title(b, names)}</h2>
            {b.windows.month && <WindowBar label="This month (UTC)" w={b.windows.month} />}
            {b.windows.day && <WindowBar label="Today (UTC)" w={b.windows.day} />}
            {b.scope === 'agent' && <p class="muted small">Per task: {usd(b.limits.per_task_usd)}</p>}
            {manage && editing !== path && (
              <button type="button" class="ghost" onClick={() => setEditing(path)}>
                Edit limits
              </button>
            )}
            {manage && editing === path && (
              <LimitsForm budget={b} path={path} onDone={list.reload} onClose={() => setEditing(null)} />
            )}
          </div>
        );
      })}
      {manage && unlimited.length > 0 && (
        <div class="card">
          <h2>Limit an agent</h2>
          <label>
            Agent
            <select value={newAgent} onChange={(e) => setNewAgent(e.currentTarget.value)}>
              <option value="">Choose an agent</option>
              {unlimited.map((a) => (
                <option key={a.uuid} value={a.uuid}>
                  {a.name}
                </option>
              ))}
            </select>
          </label>
          {newAgent !== '' && (
            <LimitsForm
              key={newAgent}
              budget={{ scope: 'agent', id: newAgent, limits: {}, windows: {} }}
              path={`agents/${newAgent}`}
              onDone={list.reload}
              onClose={() => setNewAgent('')}
            />
          )}
        </div>
      )}
    </section>
  );
}
