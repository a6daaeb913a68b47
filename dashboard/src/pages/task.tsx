import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { useCapabilities } from '../capabilities';
import { dateTime, shortId } from '../format';
import { follow, type StreamState } from '../live';
import { navigate } from '../router';
import { FINAL, type Task } from '../types';
import { ErrorBox, Link, PageTitle, Status, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { CallbackDeliveries } from './task-deliveries';
import { TaskResult } from './task-result';

interface TimelineEntry {
  at: string;
  label: string;
}

/** The task's history from its own timestamps and conversation. */
function timeline(task: Task): TimelineEntry[] {
  const entries: TimelineEntry[] = [{ at: task.created_at, label: 'queued' }];
  if (task.started_at) entries.push({ at: task.started_at, label: 'started' });
  task.messages.slice(1).forEach((m) => {
    entries.push({ at: m.created_at, label: m.role === 'agent' ? 'agent asked for input' : 'reply sent' });
  });
  if (task.completed_at) entries.push({ at: task.completed_at, label: 'completed' });
  if (task.failed_at) entries.push({ at: task.failed_at, label: 'failed' });
  if (task.cancelled_at) entries.push({ at: task.cancelled_at, label: 'cancelled' });
  return entries.sort((a, b) => a.at.localeCompare(b.at));
}

/** Follows the task's event stream; every event is the whole task. */
function useLiveTask(agentId: string, taskId: string) {
  const [task, setTask] = useState<Task | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [stream, setStream] = useState<StreamState>('connecting');
  useEffect(() => {
    setTask(null);
    api.task(agentId, taskId).then((t) => setTask((cur) => cur ?? t), setError);
    return follow<Task>(`/agent/${encodeURIComponent(agentId)}/task/${encodeURIComponent(taskId)}/events`, {
      onEvent: setTask,
      onState: (state, detail) => {
        setStream(state);
        if (state === 'unavailable') setError(new Error(detail ?? 'Task not found'));
      },
      isLast: (t) => FINAL.has(t.status),
    });
  }, [agentId, taskId]);
  return { task, setTask, error, stream };
}

function Progress({ task }: { task: Task }) {
  const p = task.progress;
  if (!p) return null;
  const pct = p.total_steps > 0 ? Math.round((p.steps_completed / p.total_steps) * 100) : 0;
  return (
    <div class="progress">
      <div class="progress-label">
        <span>{p.current_step || 'Working…'}</span>
        <span class="muted">
          {p.steps_completed}/{p.total_steps || '?'} steps
        </span>
      </div>
      <progress aria-label="Progress" max={100} value={pct} />
    </div>
  );
}

function Conversation({ task }: { task: Task }) {
  return (
    <ol class="conversation" aria-label="Conversation">
      {task.messages.map((m, i) => (
        <li key={`${m.created_at}-${i}`} class={`bubble ${m.role}`}>
          <div class="bubble-head">
            <strong>{m.role === 'agent' ? 'Agent' : 'You'}</strong> <Time iso={m.created_at} />
          </div>
          <pre class="bubble-body">{m.content}</pre>
        </li>
      ))}
    </ol>
  );
}

function ReplyBox({ task, onSent }: { task: Task; onSent(): void }) {
  const [reply, setReply] = useState('');
  const action = useAction();
  const send = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api.reply(task.agent_uuid, task.task_id, reply);
      setReply('');
      onSent();
    });
  };
  return (
    <form class="card form reply" onSubmit={send}>
      <p class="notice">
        <strong>The agent is waiting for you:</strong> {task.input_request?.message}
      </p>
      <label>
        Reply
        <textarea required rows={4} value={reply} onInput={(e) => setReply(e.currentTarget.value)} />
      </label>
      <ErrorBox error={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        Send reply
      </button>
    </form>
  );
}

/** One task: status, progress, conversation, reply, cancel or rerun, result, timeline and callbacks. */
export function TaskPage({ agentId, taskId }: { agentId: string; taskId: string }) {
  const agent = useLoad(() => api.agent(agentId), [agentId]);
  const { task, setTask, error, stream } = useLiveTask(agentId, taskId);
  const cancel = useAction();
  const rerun = useAction();
  const caps = useCapabilities();
  const work = useCan('member');
  const final = task ? FINAL.has(task.status) : false;
  return (
    <section>
      <p class="crumbs">
        <Link href="/">Agents</Link> / <Link href={`/agents/${agentId}`}>{agent.data?.name ?? 'agent'}</Link> /{' '}
        <span class="mono">{shortId(taskId)}</span>
      </p>
      <div class="page-head">
        <PageTitle title={`Task ${shortId(taskId)}`}>
          Task <span class="mono">{shortId(taskId)}</span> {task && <Status value={task.status} />}
        </PageTitle>
        {task && !final && work && (
          <button
            type="button"
            class="danger"
            disabled={cancel.busy}
            onClick={() =>
              cancel.run(async () => {
                await api.cancel(agentId, taskId);
                setTask(await api.task(agentId, taskId));
              })
            }
          >
            Cancel task
          </button>
        )}
        {task && final && work && (
          <button
            type="button"
            disabled={rerun.busy}
            title="A new task with this task's message, priority, metadata and settings"
            onClick={() =>
              rerun.run(async () => {
                const made = await api.rerun(agentId, taskId);
                navigate(`/agents/${agentId}/tasks/${made.task_id}`);
              })
            }
          >
            Rerun
          </button>
        )}
      </div>
      <p class="muted small live" aria-live="polite">
        {stream === 'live' ? '● following live' : stream === 'ended' ? 'finished' : stream}
      </p>
      <ErrorBox error={error} />
      <ErrorBox error={cancel.error} />
      <ErrorBox error={rerun.error} />
      {task && (
        <div class="task-grid">
          <div class="task-main">
            <Progress task={task} />
            {task.status === 'awaiting_input' && work && <ReplyBox task={task} onSent={() => undefined} />}
            <h2>Conversation</h2>
            <Conversation task={task} />
            <TaskResult task={task} />
          </div>
          <aside class="task-side">
            <dl class="facts">
              <dt>Status</dt>
              <dd>
                <Status value={task.status} />
              </dd>
              <dt>Priority</dt>
              <dd>{task.priority}</dd>
              <dt>Created</dt>
              <dd title={dateTime(task.created_at)}>{dateTime(task.created_at)}</dd>
              {task.estimated_start && task.status === 'queued' && (
                <>
                  <dt>Estimated start</dt>
                  <dd>{dateTime(task.estimated_start)}</dd>
                </>
              )}
              <dt>Task id</dt>
              <dd class="mono small">{task.task_id}</dd>
              {task.rerun_of && (
                <>
                  <dt>Rerun of</dt>
                  <dd class="mono small">
                    <Link href={`/agents/${agentId}/tasks/${task.rerun_of}`}>{shortId(task.rerun_of)}</Link>
                  </dd>
                </>
              )}
              {caps.telemetry && (
                <>
                  <dt>Trace</dt>
                  <dd>
                    <Link href={`/telemetry?task_id=${task.task_id}`}>traces of this task</Link>
                  </dd>
                </>
              )}
            </dl>
            <h2>Timeline</h2>
            <ol class="timeline">
              {timeline(task).map((e, i) => (
                <li key={`${e.at}-${i}`}>
                  <span>{e.label}</span> <Time iso={e.at} />
                </li>
              ))}
            </ol>
            <CallbackDeliveries agentId={agentId} taskId={taskId} status={task.status} />
          </aside>
        </div>
      )}
    </section>
  );
}
