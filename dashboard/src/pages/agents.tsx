import { useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import type { Agent } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Status, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { AgentForm } from './agent-form';

function AgentRow({ agent, onChange }: { agent: Agent; onChange(): void }) {
  const [editing, setEditing] = useState(false);
  const action = useAction();
  const manage = useCan('admin');
  const paused = agent.status === 'paused';
  if (editing)
    return (
      <tr>
        <td colSpan={6}>
          <AgentForm
            agent={agent}
            onSave={(input) => api.updateAgent(agent.uuid, input).then(onChange)}
            onClose={() => setEditing(false)}
          />
        </td>
      </tr>
    );
  return (
    <tr>
      <td>
        <Link href={`/agents/${agent.uuid}`} class="strong">
          {agent.name}
        </Link>
        {agent.description && <div class="muted small">{agent.description}</div>}
      </td>
      <td>
        <Status value={agent.status} />
      </td>
      <td class="wide-only">{agent.runtime.type}</td>
      <td class="num wide-only">{agent.concurrency}</td>
      <td class="wide-only">
        <Time iso={agent.created_at} />
      </td>
      <td class="row-actions">
        {manage && (
          <AgentActions
            agent={agent}
            paused={paused}
            onEdit={() => setEditing(true)}
            action={action}
            onChange={onChange}
          />
        )}
        <ErrorBox error={action.error} />
      </td>
    </tr>
  );
}

function AgentActions(props: {
  agent: Agent;
  paused: boolean;
  onEdit(): void;
  onChange(): void;
  action: ReturnType<typeof useAction>;
}) {
  const { agent, paused, action, onChange } = props;
  return (
    <>
      <button
        type="button"
        class="small"
        aria-label={`${paused ? 'Resume' : 'Pause'} ${agent.name}`}
        disabled={action.busy}
        onClick={() =>
          action.run(() => api.updateAgent(agent.uuid, { status: paused ? 'active' : 'paused' }).then(onChange))
        }
      >
        {paused ? 'Resume' : 'Pause'}
      </button>
      <button type="button" class="small" aria-label={`Edit ${agent.name}`} onClick={props.onEdit}>
        Edit
      </button>
      <button
        type="button"
        class="small danger"
        aria-label={`Delete ${agent.name}`}
        disabled={action.busy}
        onClick={() => {
          if (!confirm(`Delete the agent "${agent.name}"? Its open tasks are cancelled and its triggers deleted.`))
            return;
          void action.run(() => api.deleteAgent(agent.uuid).then(onChange));
        }}
      >
        Delete
      </button>
    </>
  );
}

/** Every agent of the account, with create, edit, pause/resume and delete. */
export function AgentsPage() {
  const agents = useLoad(() => api.agents(), []);
  const [creating, setCreating] = useState(false);
  const manage = useCan('admin');
  const list = agents.data?.agents ?? [];
  return (
    <section>
      <div class="page-head">
        <PageTitle title="Agents">Agents</PageTitle>
        {manage && (
          <button type="button" class="primary" onClick={() => setCreating(true)} disabled={creating}>
            New agent
          </button>
        )}
      </div>
      {creating && (
        <AgentForm
          onSave={(input) => api.createAgent(input).then((a) => navigate(`/agents/${a.uuid}`))}
          onClose={() => setCreating(false)}
        />
      )}
      <ErrorBox error={agents.error} />
      {agents.data && list.length === 0 && !creating && (
        <Empty title="No agents yet">
          {manage ? (
            <p>
              Create one with <strong>New agent</strong>, then start a worker that pulls its tasks, for example the
              example reviewer: <code>TASKHOOK_API_KEY=… TASKHOOK_AGENT_ID=… npm run example:worker</code> (a platform
              key comes from <Link href="/keys">Keys</Link>).
            </p>
          ) : (
            <p>An admin or owner of this workspace creates its agents.</p>
          )}
        </Empty>
      )}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col" class="wide-only">
                  Runtime
                </th>
                <th scope="col" class="num wide-only">
                  Concurrency
                </th>
                <th scope="col" class="wide-only">
                  Created
                </th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((agent) => (
                <AgentRow key={agent.uuid} agent={agent} onChange={agents.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
