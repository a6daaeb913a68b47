import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { shortId } from '../format';
import { follow, type StreamState } from '../live';
import { navigate } from '../router';
import { type Agent, TASK_STATUSES, type Task, type TaskStatus } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Status, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';

const POLL_MS = 2000;

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
 * Keeps a task list current: the agent's event stream when the server offers it, else a
 * refresh every 2 s (a task's status on screen follows the API within 2 s either way).
 */
function useLiveTasks(agentId: string, status: TaskStatus | '') {
  const tasks = useLoad(() => api.tasks(agentId, status), [agentId, status]);
  const [stream, setStream] = useState<StreamState>('connecting');
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const stop = follow<Task>(`/agent/${encodeURIComponent(agentId)}/tasks/events`, {
      onEvent: (task) =>
        tasks.setData((current) => {
          if (!current) return current;
          const rest = current.tasks.filter((t) => t.task_id !== task.task_id);
          const keep = status === '' || task.status === status;
          const next = keep ? [task, ...rest].sort((a, b) => b.created_at.localeCompare(a.created_at)) : rest;
          return { ...current, tasks: next };
        }),
      onState: (state) => {
        setStream(state);
        if (state === 'unavailable' && !timer) timer = setInterval(tasks.reload, POLL_MS);
      },
    });
    return () => {
      stop();
      clearInterval(timer);
    };
  }, [agentId, status, tasks.reload, tasks.setData]);
  return { ...tasks, stream };
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

/** An agent's tasks, live, with a status filter and a submit form. */
export function AgentPage({ agentId }: { agentId: string }) {
  const agent = useLoad(() => api.agent(agentId), [agentId]);
  const [status, setStatus] = useState<TaskStatus | ''>('');
  const tasks = useLiveTasks(agentId, status);
  const work = useCan('member');
  const list = tasks.data?.tasks ?? [];
  return (
    <section>
      <AgentHeader agent={agent.data} tab="tasks" />
      <ErrorBox error={agent.error} />
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
          {tasks.stream === 'live' ? '● live' : tasks.stream === 'unavailable' ? 'refreshing every 2 s' : tasks.stream}
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
