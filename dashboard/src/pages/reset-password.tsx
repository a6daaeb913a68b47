import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Link, PageTitle, useAction } from '../ui';

/** The page a password reset e-mail links to: a new password for the account, with the link's token. */
export function ResetPasswordPage() {
  const [password, setPassword] = useState('');
  const [done, setDone] = useState(false);
  const action = useAction();
  const token = new URLSearchParams(location.search).get('token') ?? '';

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await api.resetPassword(token, password);
      setDone(true);
    });
  };

  return (
    <section class="card login">
      <p class="brand big">taskhook</p>
      <PageTitle title="New password">New password</PageTitle>
      {done ? (
        <p role="status" class="notice">
          Your password is set. <Link href="/login">Log in</Link> with it.
        </p>
      ) : (
        <form onSubmit={submit}>
          <label>
            New password
            <input
              type="password"
              name="new_password"
              autoComplete="new-password"
              minLength={8}
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <ErrorBox error={action.error} />
          <button type="submit" class="primary wide" disabled={action.busy || token === ''}>
            Set password
          </button>
        </form>
      )}
    </section>
  );
}
