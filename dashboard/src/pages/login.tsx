import { useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import { saveSession } from '../session';
import { ErrorBox, Link, PageTitle, useAction, useLoad } from '../ui';

/** Where to go after logging in: the page that sent the user here, if it is a dashboard path. */
function nextPath(): string {
  const next = new URLSearchParams(location.search).get('next');
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/';
}

/** The `?next=` to carry between logging in and registering (an invitation link waits at the end). */
function keepNext(): string {
  const next = nextPath();
  return next === '/' ? '' : `?next=${encodeURIComponent(next)}`;
}

/** How a provider is named on its button. */
export function providerName(provider: string): string {
  return ({ google: 'Google', github: 'GitHub' } as Record<string, string>)[provider] ?? provider;
}

function OAuthButtons() {
  const providers = useLoad(() => api.oauthProviders().catch(() => ({ providers: [] })), []);
  const action = useAction();
  // Anything but a list of names (an older server answers 404) shows no buttons.
  const list = Array.isArray(providers.data?.providers)
    ? providers.data.providers.filter((p): p is string => typeof p === 'string')
    : [];
  if (list.length === 0) return null;
  return (
    <div class="oauth">
      <p class="muted or">or</p>
      {list.map((p) => (
        <button
          key={p}
          type="button"
          class="secondary wide"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              const start = await api.oauthStart(p);
              // Kept to check the identity provider's answer against it (no login CSRF).
              sessionStorage.setItem(`taskhook.oauth.${p}`, start.state);
              location.assign(start.authorization_url);
            })
          }
        >
          Continue with {providerName(p)}
        </button>
      ))}
      <ErrorBox error={action.error} />
    </div>
  );
}

/** Log in, or create an account (which then needs its e-mail verified). */
export function LoginPage({ mode }: { mode: 'login' | 'register' }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [registered, setRegistered] = useState(false);
  const action = useAction();
  const isLogin = mode === 'login';

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      if (isLogin) {
        const session = await api.login(email, password);
        saveSession(session.token, session.user.email);
        navigate(nextPath(), { replace: true });
      } else {
        await api.register(email, password);
        setRegistered(true);
      }
    });
  };

  return (
    <section class="card login">
      <p class="brand big">taskhook</p>
      <PageTitle title={isLogin ? 'Log in' : 'Create an account'}>{isLogin ? 'Log in' : 'Create an account'}</PageTitle>
      {registered ? (
        <p role="status" class="notice">
          Account created. Open the verification link we sent to <strong>{email}</strong>, then{' '}
          <Link href={`/login${keepNext()}`}>log in</Link>.
        </p>
      ) : (
        <form onSubmit={submit}>
          <label>
            Email
            <input
              type="email"
              name="email"
              autoComplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </label>
          <label>
            Password
            <input
              type="password"
              name="password"
              autoComplete={isLogin ? 'current-password' : 'new-password'}
              minLength={isLogin ? undefined : 8}
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <ErrorBox error={action.error} />
          <button type="submit" class="primary wide" disabled={action.busy}>
            {isLogin ? 'Log in' : 'Create account'}
          </button>
        </form>
      )}
      {isLogin && <OAuthButtons />}
      <p class="muted switch">
        {isLogin ? (
          <>
            No account yet? <Link href={`/register${keepNext()}`}>Create one</Link>
          </>
        ) : (
          <>
            Already have an account? <Link href={`/login${keepNext()}`}>Log in</Link>
          </>
        )}
      </p>
    </section>
  );
}
