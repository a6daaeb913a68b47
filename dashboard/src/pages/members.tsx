import { useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import { getEmail } from '../session';
import { type Invitation, type Member, ROLES, type Role, type Workspace } from '../types';
import { Empty, ErrorBox, PageTitle, Time, useAction, useLoad } from '../ui';
import { leftWorkspace, loadWorkspaces, roleAtLeast, useWorkspace } from '../workspace';

/** The roles `me` may give (only an owner makes owners). */
function assignable(me: Role): Role[] {
  return me === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner');
}

/** Whether `me` may change or remove a member holding `theirs` (an owner only by an owner). */
function mayManage(me: Role, theirs: Role): boolean {
  return roleAtLeast(me, 'admin') && (theirs !== 'owner' || me === 'owner');
}

function MemberRow({ ws, member, onChange }: { ws: Workspace; member: Member; onChange(): void }) {
  const action = useAction();
  const manage = !ws.personal && mayManage(ws.role, member.role);
  const isMe = member.email.toLowerCase() === getEmail()?.toLowerCase();
  const choices = manage ? assignable(ws.role) : [member.role];
  return (
    <tr data-user-uuid={member.user_uuid}>
      <td class="strong">
        {member.email}
        {isMe && <span class="muted small"> (you)</span>}
      </td>
      <td>
        {/* Named by the member alone: the column says it is the role, and "Role" stays the invite form's field. */}
        <select
          aria-label={member.email}
          value={member.role}
          disabled={!manage || action.busy}
          onChange={(e) => {
            const role = e.currentTarget.value as Role;
            const select = e.currentTarget;
            void action
              .run(() => api.changeRole(ws.uuid, member.user_uuid, role))
              .then((ok) => {
                if (!ok) select.value = member.role;
                onChange();
                // A change of one's own role changes what this dashboard may show.
                if (ok && isMe) void loadWorkspaces();
              });
          }}
        >
          {choices.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </td>
      <td class="wide-only">
        <Time iso={member.joined_at} />
      </td>
      <td class="actions-cell">
        <div class="row-actions">
          {manage && !isMe && (
            <button
              type="button"
              class="small danger"
              aria-label={`Remove ${member.email}`}
              disabled={action.busy}
              onClick={() => {
                if (!confirm(`Remove ${member.email}? The keys and ingest tokens they made here are revoked.`)) return;
                void action.run(() => api.removeMember(ws.uuid, member.user_uuid).then(onChange));
              }}
            >
              Remove
            </button>
          )}
        </div>
        <ErrorBox error={action.error} />
      </td>
    </tr>
  );
}

/** The invite form, always open for admins: "Email", "Role", confirmed with "Invite". */
function InviteForm({ ws, onDone }: { ws: Workspace; onDone(): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api.invite(ws.uuid, { email, role });
      setEmail('');
      onDone();
    });
  };
  return (
    <form class="card form" onSubmit={submit} aria-label="Invite">
      <h2>Invite a teammate</h2>
      <div class="row end">
        <label>
          Email
          <input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label class="narrow">
          Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {assignable(ws.role).map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <div class="actions invite-actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Invite
          </button>
        </div>
      </div>
      <p class="muted small">
        They get a link by e-mail; it works for the account with this address. Inviting the same address again replaces
        the earlier link.
      </p>
      <ErrorBox error={action.error} />
    </form>
  );
}

function Invitations({ ws }: { ws: Workspace }) {
  const invitations = useLoad(() => api.invitations(ws.uuid), [ws.uuid]);
  const action = useAction();
  const list: Invitation[] = invitations.data?.invitations ?? [];
  const revoke = (inv: Invitation) => {
    if (!confirm(`Revoke the invitation of ${inv.email}? Its link stops working.`)) return;
    void action.run(() => api.revokeInvitation(ws.uuid, inv.uuid).then(invitations.reload));
  };
  return (
    <section class="block" aria-labelledby="invitations-h">
      <InviteForm ws={ws} onDone={invitations.reload} />
      <h2 id="invitations-h">Pending invitations</h2>
      <ErrorBox error={invitations.error ?? action.error} />
      {invitations.data && list.length === 0 && (
        <Empty title="No pending invitations">
          <p>Invite a teammate above; they join with the role you choose once they accept.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col" class="wide-only">
                  Invited by
                </th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((inv) => (
                <tr key={inv.uuid} data-invitation-uuid={inv.uuid}>
                  <td class="strong">{inv.email}</td>
                  <td>{inv.role}</td>
                  <td class="wide-only">{inv.invited_by?.email ?? '—'}</td>
                  <td class="nowrap">
                    <Time iso={inv.expires_at} />
                  </td>
                  <td class="actions-cell">
                    <button
                      type="button"
                      class="small danger"
                      aria-label={`Revoke ${inv.email}`}
                      onClick={() => revoke(inv)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function LeaveButton({ ws }: { ws: Workspace }) {
  const action = useAction();
  const personal = useWorkspace().list.find((w) => w.personal);
  return (
    <div class="block">
      <button
        type="button"
        class="danger"
        disabled={action.busy}
        onClick={() => {
          if (!confirm(`Leave "${ws.name}"? The keys and ingest tokens you made here are revoked.`)) return;
          void action.run(async () => {
            await api.leave(ws.uuid);
            await leftWorkspace(personal?.uuid ?? null);
            navigate('/', { replace: true });
          });
        }}
      >
        Leave workspace
      </button>
      <ErrorBox error={action.error} />
    </div>
  );
}

/** The members of the current workspace, its pending invitations, and leaving it. */
export function MembersPage() {
  const { current: ws } = useWorkspace();
  const members = useLoad(() => (ws ? api.members(ws.uuid) : Promise.resolve({ members: [] })), [ws?.uuid]);
  if (!ws) {
    return (
      <section>
        <PageTitle title="Members">Members</PageTitle>
        <p class="muted">This server has no workspaces: your account is yours alone.</p>
      </section>
    );
  }
  const list = members.data?.members ?? [];
  return (
    <section>
      <PageTitle title="Members">Members of {ws.name}</PageTitle>
      {ws.personal && (
        <p class="notice">
          This is your personal workspace: it is yours alone. To work with others, create a team with{' '}
          <strong>New workspace</strong> at the top and invite them there.
        </p>
      )}
      <ErrorBox error={members.error} />
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col" class="wide-only">
                  Joined
                </th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <MemberRow key={m.user_uuid} ws={ws} member={m} onChange={members.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!ws.personal && roleAtLeast(ws.role, 'admin') && <Invitations ws={ws} />}
      {!ws.personal && <LeaveButton ws={ws} />}
    </section>
  );
}
