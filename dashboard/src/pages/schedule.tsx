import { api } from '../api';
import { navigate } from '../router';
import type { Schedule } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { NextRuns } from './schedules';

function UpcomingRuns({ agentId, schedule }: { agentId: string; schedule: Schedule }) {
  const preview = useLoad(
    () => api.previewSchedule(agentId, { cron: schedule.cron, timezone: schedule.timezone, count: 5 }),
    [agentId, schedule.cron, schedule.timezone],
  );
  if (!schedule.enabled) return <p class="muted">Paused: no upcoming runs.</p>;
  return (
    <>
      <ErrorBox error={preview.error} />
      {preview.data && <NextRuns occurrences={preview.data.occurrences} />}
    </>
  );
}

function RecentRuns({ agentId, scheduleId }: { agentId: string; scheduleId: string }) {
  const runs = useLoad(() => api.scheduleRuns(agentId, scheduleId), [agentId, scheduleId]);
  const list = runs.data?.runs ?? [];
  return (
    <>
      <div class="list-head">
        <h2>Recent runs</h2>
        <button type="button" class="small" onClick={runs.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={runs.error} />
      {runs.data && list.length === 0 && (
        <Empty title="No runs yet">
          <p>Each occurrence shows up here with the task it created, or why it was skipped.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Scheduled for</th>
                <th scope="col">Fired</th>
                <th scope="col">Task or reason</th>
              </tr>
            </thead>
            <tbody>
              {list.map((r) => (
                <tr key={r.run_id}>
                  <td>
                    <Time iso={r.scheduled_for} />
                    {r.manual && <span class="muted small"> (run now)</span>}
                  </td>
                  <td>
                    <Time iso={r.fired_at} />
                  </td>
                  <td>
                    {r.task_id ? (
                      <Link href={`/agents/${agentId}/tasks/${r.task_id}`} class="mono">
                        task {r.task_id.slice(-8)}
                      </Link>
                    ) : (
                      <span class="muted">skipped: {r.skipped_reason}</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** One schedule: its pattern, pause/resume, delete, the next runs and the recent runs. */
export function SchedulePage({ agentId, scheduleId }: { agentId: string; scheduleId: string }) {
  const schedules = useLoad(() => api.schedules(agentId), [agentId]);
  const action = useAction();
  const manage = useCan('admin');
  const schedule = schedules.data?.schedules.find((s) => s.uuid === scheduleId);
  if (schedules.data && !schedule) return <ErrorBox error={new Error('This schedule does not exist (any more).')} />;
  return (
    <section>
      <p class="crumbs">
        <Link href="/">Agents</Link> / <Link href={`/agents/${agentId}/schedules`}>Schedules</Link> /{' '}
        <span>{schedule?.name}</span>
      </p>
      <ErrorBox error={schedules.error ?? action.error} />
      {schedule && (
        <>
          <div class="page-head">
            <PageTitle title={schedule.name}>
              {schedule.name}{' '}
              <span class={`status status-${schedule.enabled ? 'enabled' : 'disabled'}`}>
                {schedule.enabled ? 'active' : 'paused'}
              </span>
            </PageTitle>
            {manage && (
              <div class="actions">
                <button
                  type="button"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(() =>
                      api.updateSchedule(agentId, scheduleId, { enabled: !schedule.enabled }).then(schedules.reload),
                    )
                  }
                >
                  {schedule.enabled ? 'Pause' : 'Resume'}
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={action.busy}
                  onClick={() => {
                    if (!confirm(`Delete the schedule "${schedule.name}"? It creates no more tasks.`)) return;
                    void action.run(() =>
                      api.deleteSchedule(agentId, scheduleId).then(() => navigate(`/agents/${agentId}/schedules`)),
                    );
                  }}
                >
                  Delete
                </button>
              </div>
            )}
          </div>
          <dl class="facts wide">
            <dt>Cron</dt>
            <dd class="mono">{schedule.cron}</dd>
            <dt>Time zone</dt>
            <dd>{schedule.timezone}</dd>
            <dt>Message</dt>
            <dd>
              <pre class="template">{schedule.message}</pre>
            </dd>
            <dt>Payload</dt>
            <dd>
              <pre class="template">{JSON.stringify(schedule.metadata, null, 2)}</pre>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={schedule.created_at} />
            </dd>
          </dl>
          <h2>Next runs</h2>
          <UpcomingRuns agentId={agentId} schedule={schedule} />
          <RecentRuns agentId={agentId} scheduleId={scheduleId} />
        </>
      )}
    </section>
  );
}
