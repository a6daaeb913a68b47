import { api } from '../api';
import type { Schedule } from '../types';
import { ErrorBox, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { HookHead, HookLog, HookPage, TaskOr } from './hook-parts';
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
  return (
    <HookLog
      title="Recent runs"
      load={runs}
      items={runs.data?.runs ?? []}
      empty={['No runs yet', 'Each occurrence shows up here with the task it created, or why it was skipped.']}
      headers={['Scheduled for', 'Fired', 'Task or reason']}
      row={(r) => (
        <tr key={r.run_id}>
          <td>
            <Time iso={r.scheduled_for} />
            {r.manual && <span class="muted small"> (run now)</span>}
          </td>
          <td>
            <Time iso={r.fired_at} />
          </td>
          <td>
            <TaskOr agentId={agentId} taskId={r.task_id}>
              skipped: {r.skipped_reason}
            </TaskOr>
          </td>
        </tr>
      )}
    />
  );
}

/** One schedule: its pattern, pause/resume, delete, the next runs and the recent runs. */
export function SchedulePage({ agentId, scheduleId }: { agentId: string; scheduleId: string }) {
  const schedules = useLoad(() => api.schedules(agentId), [agentId]);
  const action = useAction();
  const manage = useCan('admin');
  return (
    <HookPage
      agentId={agentId}
      room="schedules"
      title="Schedules"
      hook={schedules.data?.schedules.find((s) => s.uuid === scheduleId)}
      loaded={schedules.data !== undefined}
      error={schedules.error ?? action.error}
      missing="This schedule does not exist (any more)."
    >
      {(schedule) => (
        <>
          <HookHead
            name={schedule.name}
            enabled={schedule.enabled}
            states={['active', 'paused']}
            toggle={['Pause', 'Resume']}
            manage={manage}
            action={action}
            onToggle={() =>
              api.updateSchedule(agentId, scheduleId, { enabled: !schedule.enabled }).then(schedules.reload)
            }
            onDelete={() => api.deleteSchedule(agentId, scheduleId)}
            question={`Delete the schedule "${schedule.name}"? It creates no more tasks.`}
            back={`/agents/${agentId}/schedules`}
          />
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
    </HookPage>
  );
}
