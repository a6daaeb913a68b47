import { api } from '../api';
import { registrationLabel } from '../mcp-fns';
import type { McpGrant } from '../types';
import { Empty, ErrorBox, PageTitle, Time, useAction, useLoad } from '../ui';

/**
 * The MCP clients the user connected (their grants in every workspace, newest first), with
 * "Revoke": every token of that grant stops at once.
 */
export function ConnectedAppsPage() {
  const grants = useLoad(() => api.mcpGrants(), []);
  const action = useAction();
  const revoke = (grant: McpGrant) => {
    const name = grant.client.client_name ?? grant.client.client_id;
    if (!confirm(`Disconnect ${name}? Its tokens stop working at once.`)) return;
    return action.run(async () => {
      await api.revokeMcpGrant(grant.uuid);
      grants.reload();
    });
  };
  const list = grants.data?.grants;
  return (
    <section>
      <PageTitle title="Connected apps">Connected apps</PageTitle>
      <p class="muted">
        MCP clients you allowed to use taskhook through OAuth, in every workspace. Revoking one stops its tokens at
        once; the app must ask again to reconnect.
      </p>
      <ErrorBox error={grants.error ?? action.error} />
      {list && list.length === 0 && (
        <Empty title="No connected apps">
          <p>When an MCP client connects with OAuth and you allow it, it is listed here.</p>
        </Empty>
      )}
      {list && list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Workspace</th>
                <th scope="col">Role</th>
                <th scope="col">Connected</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((g) => {
                const name = g.client.client_name ?? g.client.client_id;
                return (
                  <tr key={g.uuid} data-uuid={g.uuid}>
                    <td>
                      <span class="strong">{name}</span>
                      <div class="muted small">{registrationLabel(g.client.registration)}</div>
                    </td>
                    <td>{g.workspace.name ?? g.workspace.uuid}</td>
                    <td>{g.role}</td>
                    <td>
                      <Time iso={g.created_at} />
                    </td>
                    <td>
                      <Time iso={g.last_used_at} />
                    </td>
                    <td>
                      <span class={`status status-${g.revoked_at ? 'revoked' : 'active'}`}>
                        {g.revoked_at ? 'revoked' : 'active'}
                      </span>
                    </td>
                    <td class="row-actions">
                      {!g.revoked_at && (
                        <button
                          type="button"
                          class="small danger"
                          aria-label={`Revoke ${name}`}
                          disabled={action.busy}
                          onClick={() => void revoke(g)}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
