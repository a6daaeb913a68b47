import { useState } from 'preact/hooks';
import { api } from '../api';
import type { Occurrence, Schedule } from '../types';
import { Empty, ErrorBox, Link, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { AgentHooksPage, HookState, HookTable } from './hook-parts';

type Mode = 'cron' | 'interval';
type Unit = 'minutes' | 'hours';

/** The cron pattern of "every n minutes/hours" (the API takes cron only; steps are what cron offers). */
export function intervalCron(n: number, unit: Unit): string {
  return unit === 'minutes' ? `*/${n} * * * *` : `0 */${n} * * *`;
}

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** Upcoming occurrences as the server computes them (its cron and time-zone rules, not the browser's). */
export function NextRuns({ occurrences }: { occurrences: Occurrence[] }) {
  return (
    <ol class="next-runs" aria-label="Next runs">
      {occurrences.map((o) => (
        <li key={o.scheduled_for}>
          <span class="mono small">{o.local}</span> (<Time iso={o.scheduled_for} />)
        </li>
      ))}
    </ol>
  );
}

function ScheduleForm({ agentId, onCreated }: { agentId: string; onCreated(s: Schedule): void }) {
  const [name, setName] = useState('');
  const [mode, setMode] = useState<Mode>('cron');
  const [cron, setCron] = useState('0 9 * * 1-5');
  const [every, setEvery] = useState('15');
  const [unit, setUnit] = useState<Unit>('minutes');
  const [timezone, setTimezone] = useState(browserZone());
  const [message, setMessage] = useState('');
  const [metadata, setMetadata] = useState('{}');
  const [preview, setPreview] = useState<Occurrence[] | null>(null);
  const action = useAction();
  const pattern = () => (mode === 'cron' ? cron : intervalCron(Number(every), unit));
  const parsedMetadata = () => {
    const value: unknown = JSON.parse(metadata.trim() === '' ? '{}' : metadata);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new Error('Payload must be a JSON object');
    }
    return value as Record<string, unknown>;
  };
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const input = { name, cron: pattern(), timezone, message, metadata: parsedMetadata() };
      onCreated(await api.createSchedule(agentId, input));
    });
  };
  const showPreview = () =>
    action.run(async () => setPreview((await api.previewSchedule(agentId, { cron: pattern(), timezone })).occurrences));
  return (
    <form class="card form" onSubmit={submit} aria-label="New schedule">
      <h2>New schedule</h2>
      <label>
        Name
        <input required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Repeat
        <select value={mode} onChange={(e) => setMode(e.currentTarget.value as Mode)}>
          <option value="cron">Cron pattern</option>
          <option value="interval">Every …</option>
        </select>
      </label>
      {mode === 'cron' ? (
        <label>
          Cron
          <input required class="mono" value={cron} onInput={(e) => setCron(e.currentTarget.value)} />
        </label>
      ) : (
        <div class="inline-fields">
          <label>
            Every
            <input
              required
              type="number"
              min={1}
              max={unit === 'minutes' ? 59 : 23}
              value={every}
              onInput={(e) => setEvery(e.currentTarget.value)}
            />
          </label>
          <label>
            Unit
            <select value={unit} onChange={(e) => setUnit(e.currentTarget.value as Unit)}>
              <option value="minutes">minutes</option>
              <option value="hours">hours</option>
            </select>
          </label>
        </div>
      )}
      <label>
        Time zone
        <input required value={timezone} onInput={(e) => setTimezone(e.currentTarget.value)} />
      </label>
      <label>
        Message
        <textarea required rows={3} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      </label>
      <label>
        Payload (JSON)
        <textarea rows={3} class="mono" value={metadata} onInput={(e) => setMetadata(e.currentTarget.value)} />
      </label>
      <p class="muted small">
        The payload becomes each task's metadata. <code>{'{{schedule.local_date}}'}</code> in the message inserts the
        occurrence's date in the time zone.
      </p>
      {preview && <NextRuns occurrences={preview} />}
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="button" disabled={action.busy} onClick={() => void showPreview()}>
          Preview next runs
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          Create
        </button>
      </div>
    </form>
  );
}

function ScheduleRow({
  agentId,
  s,
  manage,
  reload,
}: {
  agentId: string;
  s: Schedule;
  manage: boolean;
  reload(): void;
}) {
  const action = useAction();
  return (
    <tr>
      <td>
        <Link href={`/agents/${agentId}/schedules/${s.uuid}`} class="strong">
          {s.name}
        </Link>
      </td>
      <td class="mono small">{s.cron}</td>
      <td class="small">{s.timezone}</td>
      <td>
        <HookState enabled={s.enabled} labels={['active', 'paused']} />
      </td>
      <td>{s.next_run_at ? <Time iso={s.next_run_at} /> : <span class="muted">none</span>}</td>
      {manage && (
        <td class="actions">
          <button
            type="button"
            class="small"
            disabled={action.busy}
            aria-label={`${s.enabled ? 'Pause' : 'Resume'} ${s.name}`}
            onClick={() =>
              void action.run(() => api.updateSchedule(agentId, s.uuid, { enabled: !s.enabled }).then(reload))
            }
          >
            {s.enabled ? 'Pause' : 'Resume'}
          </button>
          <button
            type="button"
            class="small danger"
            disabled={action.busy}
            aria-label={`Delete ${s.name}`}
            onClick={() => {
              if (!confirm(`Delete the schedule "${s.name}"? It creates no more tasks.`)) return;
              void action.run(() => api.deleteSchedule(agentId, s.uuid).then(reload));
            }}
          >
            Delete
          </button>
          <ErrorBox error={action.error} />
        </td>
      )}
    </tr>
  );
}

function AgentSchedules({ agentId }: { agentId: string }) {
  const schedules = useLoad(() => api.schedules(agentId), [agentId]);
  const [creating, setCreating] = useState(false);
  const manage = useCan('admin');
  const list = schedules.data?.schedules ?? [];
  return (
    <>
      <div class="list-head">
        <h2>Schedules</h2>
        {manage && (
          <button type="button" class="primary" onClick={() => setCreating(true)} disabled={creating}>
            New schedule
          </button>
        )}
      </div>
      {creating && (
        <ScheduleForm
          agentId={agentId}
          onCreated={() => {
            setCreating(false);
            schedules.reload();
          }}
        />
      )}
      <ErrorBox error={schedules.error} />
      {schedules.data && list.length === 0 && !creating && (
        <Empty title="No schedules yet">
          <p>A schedule creates a task on this agent at each occurrence of a cron pattern, in a time zone.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <HookTable headers={['Name', 'Cron', 'Time zone', 'State', 'Next run', ...(manage ? ['Actions'] : [])]}>
          {list.map((s) => (
            <ScheduleRow key={s.uuid} agentId={agentId} s={s} manage={manage} reload={schedules.reload} />
          ))}
        </HookTable>
      )}
    </>
  );
}

/** Schedules of one agent; from the main navigation, first pick the agent. */
export function SchedulesPage({ agentId }: { agentId?: string }) {
  return (
    <AgentHooksPage agentId={agentId} room="schedules" title="Schedules">
      {(id) => <AgentSchedules agentId={id} />}
    </AgentHooksPage>
  );
}
