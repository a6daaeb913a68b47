import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { shortId } from '../format';
import { follow, type StreamState } from '../live';
import { navigate } from '../router';
import { type Agent, TASK_STATUSES, type Task, type TaskStatus } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Status, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { LimitsForm, limitsText } from './limits-form';

/** An agent's name, status and the tabs between its tasks and triggers. */
export function AgentHeader({ agent, tab }: { agent: Agent | undefined; tab: 'tasks' | 'triggers' | 'schedules' }) {
  if (!agent) return null;
  return (
    <div class="agent-head">
      <p class="crumbs">
        <Link href="/">Agents</Link> / <span>{agent.name}</span>
      </p>
      <div class="page-head">
        <PageTitle title={agent.name}>
          {agent.name} <Status value={agent.status} />
        </PageTitle>
      </div>
      {agent.description && <p class="muted">{agent.description}</p>}
      <nav class="tabs" aria-label="Agent">
        <Link href={`/agents/${agent.uuid}`} class="nav-link" aria-current={tab === 'tasks' ? 'page' : undefined}>
          Tasks
        </Link>
        <Link
          href={`/agents/${agent.uuid}/triggers`}
          class="nav-link"
          aria-current={tab === 'triggers' ? 'page' : undefined}
        >
          Triggers
        </Link>
        <Link
          href={`/agents/${agent.uuid}/schedules`}
          class="nav-link"
          aria-current={tab === 'schedules' ? 'page' : undefined}
        >
          Schedules
        </Link>
      </nav>
    </div>
  );
}

function SubmitForm({ agentId, onSubmitted }: { agentId: string; onSubmitted(taskId: string): void }) {
  const [message, setMessage] = useState('');
  const [priority, setPriority] = useState('5');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const task = await api.submit(agentId, { message, priority: Number(priority) });
      setMessage('');
      onSubmitted(task.task_id);
    });
  };
  return (
    <form class="card form submit-form" onSubmit={submit} aria-label="Submit a task">
      <label class="grow">
        Message
        <textarea required rows={3} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      </label>
      <div class="row end">
        <label class="narrow">
          Priority
          <input
            type="number"
            min={1}
            max={10}
            required
            value={priority}
            onInput={(e) => setPriority(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="primary" disabled={action.busy}>
          Submit task
        </button>
      </div>
      <ErrorBox error={action.error} />
    </form>
  );
}

/**
 * Keeps a task list current from the agent's event stream (`GET /agent/:id/tasks/events`). The
 * stream opens first and the list is read again once it is live, so no change falls between the
 * two; every event since then replaces its task's entry (a task's events come in order, so the last
 * one is its state now). A lost connection resumes with Last-Event-ID and misses nothing.
 */
function useLiveTasks(agentId: string, status: TaskStatus | '') {
  const tasks = useLoad(() => api.tasks(agentId, status), [agentId, status]);
  const [stream, setStream] = useState<{ state: StreamState; detail?: string }>({ state: 'connecting' });
  const [latest, setLatest] = useState<ReadonlyMap<string, Task>>(new Map());
  useEffect(() => {
    setLatest(new Map());
    let opened = false;
    return follow<Task>(`/agent/${encodeURIComponent(agentId)}/tasks/events`, {
      onEvent: (task) => setLatest((current) => new Map(current).set(task.task_id, task)),
      onState: (state, detail) => {
        setStream({ state, ...(detail ? { detail } : {}) });
        if (state === 'live' && !opened) {
          opened = true;
          tasks.reload();
        }
      },
    });
  }, [agentId, status, tasks.reload]);
  const list = tasks.data && mergeLatest(tasks.data.tasks, latest, status);
  return { ...tasks, list, stream };
}

/** The listed tasks with each changed one replaced by its latest event (new ones included), newest first. */
function mergeLatest(listed: Task[], latest: ReadonlyMap<string, Task>, status: TaskStatus | '') {
  const rest = listed.filter((t) => !latest.has(t.task_id));
  const changed = [...latest.values()].filter((t) => status === '' || t.status === status);
  return [...changed, ...rest].sort((a, b) => b.created_at.localeCompare(a.created_at));
}

function TaskRows({ agentId, tasks }: { agentId: string; tasks: Task[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Priority
            </th>
            <th scope="col">Age</th>
          </tr>
        </thead>
        <tbody>
          {tasks.map((task) => (
            <tr key={task.task_id} data-task-id={task.task_id}>
              <td class="message-cell">
                <Link href={`/agents/${agentId}/tasks/${task.task_id}`}>
                  <span class="mono muted">{shortId(task.task_id)}</span> {task.message.slice(0, 120)}
                </Link>
              </td>
              <td>
                <Status value={task.status} />
              </td>
              <td class="num">{task.priority}</td>
              <td>
                <Time iso={task.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The agent's requests- and tokens-per-minute limits for its model calls; admins edit them. */
function AgentLimits({ agentId }: { agentId: string }) {
  const limit = useLoad(() => api.rateLimit(`agents/${agentId}`), [agentId]);
  const manage = useCan('admin');
  const [editing, setEditing] = useState(false);
  return (
    <div class="block agent-limits">
      <p class="muted small">
        Model calls: <span class="strong">{limit.data ? limitsText(limit.data.limits) : '…'}</span>
        {manage && !editing && limit.data && (
          <>
            {' '}
            <button type="button" class="small" onClick={() => setEditing(true)}>
              Edit limits
            </button>
          </>
        )}
      </p>
      <ErrorBox error={limit.error} />
      {editing && limit.data && (
        <LimitsForm
          path={`agents/${agentId}`}
          limits={limit.data.limits}
          onSaved={() => {
            setEditing(false);
            limit.reload();
          }}
          onClose={() => setEditing(false)}
        />
      )}
    </div>
  );
}

/** An agent's tasks, live, with a status filter and a submit form. */
export function AgentPage({ agentId }: { agentId: string }) {
  const agent = useLoad(() => api.agent(agentId), [agentId]);
  const [status, setStatus] = useState<TaskStatus | ''>('');
  const tasks = useLiveTasks(agentId, status);
  const work = useCan('member');
  const list = tasks.list ?? [];
  return (
    <section>
      <AgentHeader agent={agent.data} tab="tasks" />
      <ErrorBox error={agent.error} />
      {agent.data && <AgentLimits agentId={agentId} />}
      {agent.data && work && (
        <SubmitForm agentId={agentId} onSubmitted={(taskId) => navigate(`/agents/${agentId}/tasks/${taskId}`)} />
      )}
      <div class="list-head">
        <h2>Tasks</h2>
        <label class="inline">
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value as TaskStatus | '')}>
            <option value="">all</option>
            {TASK_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <span class="muted small live" aria-live="polite">
          {tasks.stream.state === 'live'
            ? '● live'
            : tasks.stream.state === 'unavailable'
              ? `not live: ${tasks.stream.detail ?? 'the stream is unavailable'}`
              : tasks.stream.state}
        </span>
      </div>
      <ErrorBox error={tasks.error} />
      {tasks.data && list.length === 0 && (
        <Empty title={status ? `No ${status} tasks` : 'No tasks yet'}>
          <p>
            Submit one above, or from code: <code>POST /agent/request/{agentId}</code> with a platform key. A worker
            claims it with <code>POST /agent/{agentId}/tasks/claim</code> (the SDK's worker does this for you).
          </p>
        </Empty>
      )}
      {list.length > 0 && <TaskRows agentId={agentId} tasks={list} />}
    </section>
  );
}
