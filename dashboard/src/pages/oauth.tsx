import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import { saveSession } from '../session';
import { ErrorBox, Link, PageTitle } from '../ui';
import { providerName } from './login';

/**
 * Where the identity provider sends the browser back. The code (or error) is posted to the API
 * only when `state` is the one this tab stored before leaving, so nobody can log a victim into
 * an attacker's account by sending them a crafted link.
 */
export function OAuthFinishPage({ provider }: { provider: string }) {
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const params = new URLSearchParams(location.search);
    const key = `taskhook.oauth.${provider}`;
    const expected = sessionStorage.getItem(key);
    sessionStorage.removeItem(key);
    const state = params.get('state');
    if (!expected || !state || state !== expected) {
      setError(new Error('This sign-in link was not started from this browser tab. Start again from the login page.'));
      return;
    }
    const code = params.get('code');
    const description = params.get('error_description');
    const body = code
      ? { code, state }
      : {
          error: params.get('error') ?? 'access_denied',
          ...(description ? { error_description: description } : {}),
          state,
        };
    api.oauthFinish(provider, body).then((session) => {
      saveSession(session.token, session.user.email);
      navigate('/', { replace: true });
    }, setError);
  }, [provider]);
  return (
    <section class="card login">
      <PageTitle title="Signing in">Signing in with {providerName(provider)}</PageTitle>
      {error ? (
        <>
          <ErrorBox error={error} />
          <Link href="/login">Back to the login page</Link>
        </>
      ) : (
        <p role="status">Finishing sign-in…</p>
      )}
    </section>
  );
}
