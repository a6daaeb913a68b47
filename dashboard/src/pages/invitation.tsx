import { api } from '../api';
import { navigate } from '../router';
import { clearSession, getEmail } from '../session';
import { ErrorBox, Link, PageTitle, useAction } from '../ui';
import { resetWorkspaces, switchWorkspace } from '../workspace';

/**
 * The page an invitation link opens (`/dashboard/invitations/<token>`): the signed-in user
 * accepts it and then works in that workspace. Signing in first comes back here.
 */
export function InvitationPage({ token }: { token: string }) {
  const action = useAction();
  const accept = () =>
    action.run(async () => {
      const workspace = await api.acceptInvitation(token);
      await switchWorkspace(workspace.uuid);
      // The link is used up: leave it out of the history.
      navigate('/', { replace: true });
    });
  const otherAccount = () => {
    clearSession();
    resetWorkspaces();
    navigate(`/login?next=${encodeURIComponent(`/invitations/${token}`)}`, { replace: true });
  };
  return (
    <section class="card invitation">
      <PageTitle title="Invitation">You are invited to a workspace</PageTitle>
      <p>
        Accepting adds <strong>{getEmail()}</strong> to the workspace with the role it was sent with; you can then
        switch to it at the top of every page.
      </p>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="button" class="primary" disabled={action.busy} onClick={() => void accept()}>
          Accept invitation
        </button>
        <button type="button" class="ghost" onClick={otherAccount}>
          Use another account
        </button>
        <Link href="/" class="muted small">
          Not now
        </Link>
      </div>
    </section>
  );
}
