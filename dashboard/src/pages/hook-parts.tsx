import type { ComponentChildren, JSX } from 'preact';
import { useEffect } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import { Empty, ErrorBox, Link, PageTitle, type useAction, useLoad } from '../ui';
import { AgentHeader } from './agent';

// What the pages of triggers and schedules (an agent's hooks: what creates its tasks) share.

/** The agent's tab a hook lives under, which is also its path segment. */
export type HookRoom = 'triggers' | 'schedules';

/** A hook's state as a badge; `labels` name the enabled and the disabled state. */
export function HookState({ enabled, labels }: { enabled: boolean; labels: [string, string] }) {
  return <span class={`status status-${enabled ? 'enabled' : 'disabled'}`}>{enabled ? labels[0] : labels[1]}</span>;
}

/**
 * The list page of one agent's triggers or schedules (`title`: "Triggers"), with an agent picker
 * when there are several. From the main navigation, without an agent, it goes to the first agent's;
 * so does a path naming an agent the current workspace does not have (after a switch of workspace,
 * the path still names the old one's agent). The agent's list is asked for only once the agent is
 * known to be in this workspace, never for another workspace's agent.
 */
export function AgentHooksPage({
  agentId,
  room,
  title,
  children,
}: {
  agentId?: string;
  room: HookRoom;
  title: string;
  children: (agentId: string) => JSX.Element;
}) {
  const agents = useLoad(() => api.agents(), []);
  const list = agents.data?.agents ?? [];
  const agent = list.find((a) => a.uuid === agentId);
  useEffect(() => {
    if (agents.data && !agent && list[0]) navigate(`/agents/${list[0].uuid}/${room}`, { replace: true });
  }, [agentId, agents.data]);
  return (
    <section>
      {agent ? <AgentHeader agent={agent} tab={room} /> : <PageTitle title={title}>{title}</PageTitle>}
      <ErrorBox error={agents.error} />
      {agents.data && list.length === 0 && (
        <Empty title="No agents yet">
          <p>
            {title} belong to an agent. <Link href="/">Create an agent</Link> first.
          </p>
        </Empty>
      )}
      {list.length > 1 && agent && (
        <label class="inline">
          Agent
          <select value={agentId} onChange={(e) => navigate(`/agents/${e.currentTarget.value}/${room}`)}>
            {list.map((a) => (
              <option key={a.uuid} value={a.uuid}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {agent && children(agent.uuid)}
    </section>
  );
}

/**
 * The page of one trigger or schedule: the crumbs back to its agent's list, the load or action
 * error, then `children` once it is found; `missing` is the error shown when it is not (any more).
 */
export function HookPage<T extends { name: string }>({
  agentId,
  room,
  title,
  hook,
  loaded,
  error,
  missing,
  children,
}: {
  agentId: string;
  room: HookRoom;
  title: string;
  hook: T | undefined;
  loaded: boolean;
  error: unknown;
  missing: string;
  children: (hook: T) => JSX.Element;
}) {
  if (loaded && !hook) return <ErrorBox error={new Error(missing)} />;
  return (
    <section>
      <p class="crumbs">
        <Link href="/">Agents</Link> / <Link href={`/agents/${agentId}/${room}`}>{title}</Link> /{' '}
        <span>{hook?.name}</span>
      </p>
      <ErrorBox error={error} />
      {hook && children(hook)}
    </section>
  );
}

type Action = ReturnType<typeof useAction>;

/**
 * The head of a hook's page: its name and state, and for those who may manage it the button that
 * switches it on or off (`toggle`: its labels while enabled and while disabled), the `extra`
 * buttons, and Delete, which asks `question` first and goes back to the list (`back`) once done.
 */
export function HookHead({
  name,
  enabled,
  states,
  toggle,
  manage,
  action,
  onToggle,
  onDelete,
  question,
  back,
  extra,
}: {
  name: string;
  enabled: boolean;
  states: [string, string];
  toggle: [string, string];
  manage: boolean;
  action: Action;
  onToggle(): Promise<unknown>;
  onDelete(): Promise<unknown>;
  question: string;
  back: string;
  extra?: ComponentChildren;
}) {
  return (
    <div class="page-head">
      <PageTitle title={name}>
        {name} <HookState enabled={enabled} labels={states} />
      </PageTitle>
      {manage && (
        <div class="actions">
          <button type="button" disabled={action.busy} onClick={() => action.run(onToggle)}>
            {enabled ? toggle[0] : toggle[1]}
          </button>
          {extra}
          <button
            type="button"
            class="danger"
            disabled={action.busy}
            onClick={() => {
              if (!confirm(question)) return;
              void action.run(() => onDelete().then(() => navigate(back)));
            }}
          >
            Delete
          </button>
        </div>
      )}
    </div>
  );
}

/** A log row's last cell: the task it created, or (`children`) why there is none. */
export function TaskOr({
  agentId,
  taskId,
  children,
}: {
  agentId: string;
  taskId: string | null;
  children: ComponentChildren;
}) {
  return taskId ? (
    <Link href={`/agents/${agentId}/tasks/${taskId}`} class="mono">
      task {taskId.slice(-8)}
    </Link>
  ) : (
    <span class="muted">{children}</span>
  );
}

/**
 * What a hook did, newest first (a trigger's deliveries, a schedule's runs): a heading with
 * Refresh, the load error, `empty` (title and text) once loaded with nothing, else a table of
 * `headers` and one `row` per item.
 */
export function HookLog<T>({
  title,
  load,
  items,
  empty,
  headers,
  row,
}: {
  title: string;
  load: { data: object | undefined; error: unknown; reload(): void };
  items: T[];
  empty: [string, string];
  headers: string[];
  row: (item: T) => JSX.Element;
}) {
  return (
    <>
      <div class="list-head">
        <h2>{title}</h2>
        <button type="button" class="small" onClick={load.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={load.error} />
      {load.data !== undefined && items.length === 0 && (
        <Empty title={empty[0]}>
          <p>{empty[1]}</p>
        </Empty>
      )}
      {items.length > 0 && <HookTable headers={headers}>{items.map(row)}</HookTable>}
    </>
  );
}

/** A table of hooks or of what they did: one column a header, `children` the rows. */
export function HookTable({ headers, children }: { headers: string[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {headers.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
