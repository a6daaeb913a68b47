import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onUnauthorized } from './api';
import { type Capabilities, resetCapabilities, useCapabilities } from './capabilities';
import { AgentPage } from './pages/agent';
import { AgentsPage } from './pages/agents';
import { KeysPage } from './pages/keys';
import { LoginPage } from './pages/login';
import { OAuthFinishPage } from './pages/oauth';
import { ProvidersPage } from './pages/providers';
import { ResetPasswordPage } from './pages/reset-password';
import { TaskPage } from './pages/task';
import { TelemetryPage } from './pages/telemetry';
import { TracePage } from './pages/trace';
import { TriggerPage } from './pages/trigger';
import { TriggersPage } from './pages/triggers';
import { currentPath, match, navigate, usePath } from './router';
import { clearSession, getEmail, getToken } from './session';
import { Link } from './ui';
import './styles.css';

const PUBLIC = ['/login', '/register', '/reset-password'];

onUnauthorized(() => {
  const back = currentPath();
  navigate(`/login${back !== '/' && !back.startsWith('/login') ? `?next=${encodeURIComponent(back)}` : ''}`, {
    replace: true,
  });
});

type Params = Record<string, string>;

/** The screens, first match wins; `:name` segments become props. */
const ROUTES: [string, (p: Params) => preact.JSX.Element][] = [
  ['/oauth/:provider', (p) => <OAuthFinishPage provider={p.provider as string} />],
  ['/login', () => <LoginPage mode="login" />],
  ['/register', () => <LoginPage mode="register" />],
  ['/reset-password', () => <ResetPasswordPage />],
  ['/', () => <AgentsPage />],
  ['/agents', () => <AgentsPage />],
  ['/agents/:id', (p) => <AgentPage agentId={p.id as string} />],
  ['/agents/:id/tasks/:taskId', (p) => <TaskPage agentId={p.id as string} taskId={p.taskId as string} />],
  ['/triggers', () => <TriggersPage />],
  ['/agents/:id/triggers', (p) => <TriggersPage agentId={p.id as string} />],
  [
    '/agents/:id/triggers/:triggerId',
    (p) => <TriggerPage agentId={p.id as string} triggerId={p.triggerId as string} />,
  ],
  ['/keys', () => <KeysPage />],
  ['/telemetry', () => <TelemetryPage />],
  ['/telemetry/traces/:traceId', (p) => <TracePage traceId={p.traceId as string} />],
  ['/providers', () => <ProvidersPage />],
];

function Page({ path }: { path: string }) {
  for (const [pattern, view] of ROUTES) {
    const params = match(pattern, path);
    if (params) return view(params);
  }
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing lives at this address. <Link href="/">Back to your agents</Link>.
      </p>
    </section>
  );
}

const NAV: [string, string, keyof Capabilities | null][] = [
  ['/', 'Agents', null],
  ['/triggers', 'Triggers', null],
  ['/keys', 'Keys', null],
  ['/telemetry', 'Telemetry', 'telemetry'],
  ['/providers', 'Providers', 'providers'],
];

function section(path: string): string {
  if (path.startsWith('/keys')) return '/keys';
  if (path.startsWith('/telemetry')) return '/telemetry';
  if (path.startsWith('/providers')) return '/providers';
  if (path.startsWith('/triggers') || /^\/agents\/[^/]+\/triggers/.test(path)) return '/triggers';
  return '/';
}

/** The main navigation; Telemetry and Providers appear only when the server offers them. */
function MainNav({ current }: { current: string }) {
  const caps = useCapabilities();
  return (
    <nav aria-label="Main">
      {NAV.filter(([, , needs]) => needs === null || caps[needs]).map(([href, label]) => (
        <Link key={href} href={href} class="nav-link" aria-current={current === href ? 'page' : undefined}>
          {label}
        </Link>
      ))}
    </nav>
  );
}

function Shell() {
  const path = usePath();
  const signedIn = getToken() !== null;
  const isPublic = PUBLIC.includes(path) || path.startsWith('/oauth/');
  const [, force] = useState(0);

  useEffect(() => {
    if (!signedIn && !isPublic) navigate('/login', { replace: true });
  }, [signedIn, isPublic]);
  // Move focus to the new page's heading, so keyboard and screen-reader users start there.
  useEffect(() => {
    document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true });
  }, [path]);

  if (!signedIn && !isPublic) return null;
  if (isPublic)
    return (
      <main id="main" class="public">
        <Page path={path} />
      </main>
    );
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/" class="brand">
          taskhook
        </Link>
        <MainNav current={section(path)} />
        <div class="account">
          <span class="muted email">{getEmail()}</span>
          <button
            type="button"
            class="ghost"
            onClick={() => {
              clearSession();
              resetCapabilities();
              force((n) => n + 1);
              navigate('/login');
            }}
          >
            Log out
          </button>
        </div>
      </header>
      <main id="main">
        <Page path={path} />
      </main>
    </>
  );
}

render(<Shell />, document.getElementById('app') as HTMLElement);
