import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import {
  consentRequestId,
  defaultGrantRole,
  type GrantRole,
  grantableRoles,
  redirectHost,
  registrationLabel,
  safeRedirect,
} from '../mcp-fns';
import { Empty, ErrorBox, PageTitle, Time, useAction, useLoad } from '../ui';
import { useWorkspace } from '../workspace';

/**
 * The consent page the authorization endpoint sends a browser to
 * (`/dashboard/mcp/authorize?request_id=…`): the signed-in user sees which client asks and where
 * the browser goes back to, picks the workspace and a role no higher than their own there, and
 * allows or denies; either answer leads the browser to the client's redirect URI.
 */
export function McpAuthorizePage() {
  const requestId = consentRequestId(location.search);
  const ws = useWorkspace();
  const request = useLoad(() => (requestId ? api.authorizationRequest(requestId) : Promise.resolve(null)), [requestId]);
  const [workspaceUuid, setWorkspaceUuid] = useState<string>('');
  const [role, setRole] = useState<GrantRole>('member');
  const action = useAction();

  const workspace = ws.list.find((w) => w.uuid === workspaceUuid) ?? ws.current ?? ws.list[0] ?? null;
  const roles = workspace ? grantableRoles(workspace.role) : (['viewer'] as GrantRole[]);
  useEffect(() => {
    if (!workspace) return;
    setWorkspaceUuid(workspace.uuid);
    setRole((was) => defaultGrantRole(workspace.role, was));
  }, [workspace?.uuid, workspace?.role]);

  const answer = (approve: boolean) =>
    action.run(async () => {
      if (!requestId || !workspace) return;
      const { redirect_to } = approve
        ? await api.approveAuthorization(requestId, { workspace_uuid: workspace.uuid, role })
        : await api.denyAuthorization(requestId);
      const target = safeRedirect(redirect_to);
      if (!target) throw new Error('The server answered an address the dashboard will not open');
      location.assign(target);
    });

  if (!requestId || request.data === null)
    return (
      <section class="card">
        <PageTitle title="Connect an app">Connect an app</PageTitle>
        <Empty title="No authorization request">
          <p>This page opens when an MCP client asks to connect; start again from the app.</p>
        </Empty>
      </section>
    );
  if (request.error)
    return (
      <section class="card">
        <PageTitle title="Connect an app">Connect an app</PageTitle>
        <ErrorBox error={request.error} />
        <p class="muted">
          The request may have expired (they last 10 minutes) or been answered already: start again from the app.
        </p>
      </section>
    );
  if (!request.data) return <p class="muted">Loading…</p>;
  const { client, redirect_uri, expires_at } = request.data;
  const name = client.client_name ?? client.client_id;
  return (
    <section class="card consent">
      <PageTitle title="Connect an app">
        Allow <span class="strong">{name}</span> to use taskhook?
      </PageTitle>
      <dl class="facts">
        <dt>App</dt>
        <dd data-testid="client-name">{name}</dd>
        {client.client_uri && (
          <>
            <dt>Website</dt>
            <dd class="mono">{client.client_uri}</dd>
          </>
        )}
        <dt>Client ID</dt>
        <dd class="mono">{client.client_id}</dd>
        <dt>Known by</dt>
        <dd>{registrationLabel(client.registration)}</dd>
        <dt>Returns to</dt>
        <dd class="mono" data-testid="redirect-host" title={redirect_uri}>
          {redirectHost(redirect_uri)}
        </dd>
        <dt>Request expires</dt>
        <dd>
          <Time iso={expires_at} />
        </dd>
      </dl>
      <p>
        The app will use the MCP endpoint as you, in the workspace you pick, with the role you pick (never more than
        your own role there). You can disconnect it any time under Connected apps.
      </p>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          void answer(true);
        }}
      >
        <label>
          Workspace
          <select value={workspace?.uuid ?? ''} onChange={(e) => setWorkspaceUuid(e.currentTarget.value)}>
            {ws.list.map((w) => (
              <option key={w.uuid} value={w.uuid}>
                {w.personal ? 'Personal' : w.name} ({w.role})
              </option>
            ))}
          </select>
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as GrantRole)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <ErrorBox error={action.error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={action.busy || !workspace}>
            Allow
          </button>
          <button type="button" class="ghost" disabled={action.busy} onClick={() => void answer(false)}>
            Deny
          </button>
        </div>
      </form>
    </section>
  );
}
