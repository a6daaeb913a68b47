import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { onUnauthorized } from './api';
import { type Capabilities, resetCapabilities, useCapabilities } from './capabilities';
import { AgentPage } from './pages/agent';
import { AgentsPage } from './pages/agents';
import { AuditLogPage } from './pages/audit-log';
import { BudgetsPage } from './pages/budgets';
import { ConnectedAppsPage } from './pages/connected-apps';
import { InvitationPage } from './pages/invitation';
import { KeysPage } from './pages/keys';
import { LoginPage } from './pages/login';
import { McpAuthorizePage } from './pages/mcp-authorize';
import { MembersPage } from './pages/members';
import { OAuthFinishPage } from './pages/oauth';
import { ProvidersPage } from './pages/providers';
import { ResetPasswordPage } from './pages/reset-password';
import { RoutesPage } from './pages/routes';
import { SchedulePage } from './pages/schedule';
import { SchedulesPage } from './pages/schedules';
import { TaskPage } from './pages/task';
import { TelemetryPage } from './pages/telemetry';
import { TracePage } from './pages/trace';
import { TriggerPage } from './pages/trigger';
import { TriggersPage } from './pages/triggers';
import { currentPath, match, navigate, usePath } from './router';
import { clearSession, getEmail, getToken } from './session';
import { WorkspaceSwitcher } from './switcher';
import { ErrorBox, Link } from './ui';
import { loadWorkspaces, resetWorkspaces, roleAtLeast, useWorkspace } from './workspace';
import './styles.css';

const PUBLIC = ['/login', '/register', '/reset-password'];

onUnauthorized(() => {
  resetWorkspaces();
  // The consent page keeps its request (`?request_id=`) across logging in again.
  const back = currentPath() === '/mcp/authorize' ? currentPath() + location.search : currentPath();
  // Several calls may be refused at once: the first one decides where logging in leads back to.
  if (back.startsWith('/login')) return;
  navigate(`/login${back !== '/' ? `?next=${encodeURIComponent(back)}` : ''}`, { replace: true });
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
  ['/schedules', () => <SchedulesPage />],
  ['/agents/:id/schedules', (p) => <SchedulesPage agentId={p.id as string} />],
  [
    '/agents/:id/schedules/:scheduleId',
    (p) => <SchedulePage agentId={p.id as string} scheduleId={p.scheduleId as string} />,
  ],
  ['/keys', () => <KeysPage />],
  ['/telemetry', () => <TelemetryPage />],
  ['/telemetry/traces/:traceId', (p) => <TracePage traceId={p.traceId as string} />],
  ['/providers', () => <ProvidersPage />],
  ['/budgets', () => <BudgetsPage />],
  ['/routes', () => <RoutesPage />],
  ['/members', () => <MembersPage />],
  ['/audit-log', () => <AuditLogPage />],
  ['/invitations/:token', (p) => <InvitationPage token={p.token as string} />],
  ['/mcp/authorize', () => <McpAuthorizePage />],
  ['/connected-apps', () => <ConnectedAppsPage />],
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

/** What a link needs: a capability of the server, or (with workspaces) a least role. */
type Needs = keyof Capabilities | 'workspaces' | 'admin' | 'workspace admin' | null;

const NAV: [string, string, Needs][] = [
  ['/', 'Agents', null],
  ['/triggers', 'Triggers', null],
  ['/schedules', 'Schedules', null],
  ['/keys', 'Keys', 'admin'],
  ['/telemetry', 'Telemetry', 'telemetry'],
  ['/providers', 'Providers', 'providers'],
  ['/routes', 'Routes', 'providers'],
  ['/budgets', 'Budgets', 'providers'],
  ['/members', 'Members', 'workspaces'],
  ['/audit-log', 'Audit log', 'workspace admin'],
  ['/connected-apps', 'Connected apps', null],
];

/** The list page a path belongs to (where a switch of workspace lands: details belong to the old one). */
function section(path: string): string {
  // The connected apps span every workspace: a switch leaves the page where it is.
  if (path === '/connected-apps') return path;
  if (path.startsWith('/members')) return '/members';
  if (path.startsWith('/audit-log')) return '/audit-log';
  if (path.startsWith('/keys')) return '/keys';
  if (path.startsWith('/telemetry')) return '/telemetry';
  if (path.startsWith('/providers')) return '/providers';
  if (path.startsWith('/budgets')) return '/budgets';
  if (path.startsWith('/routes')) return '/routes';
  if (path.startsWith('/triggers') || /^\/agents\/[^/]+\/triggers/.test(path)) return '/triggers';
  if (path.startsWith('/schedules') || /^\/agents\/[^/]+\/schedules/.test(path)) return '/schedules';
  return '/';
}

/**
 * The main navigation; Telemetry and Providers (with Routes and Budgets) appear only when the server offers them, Members
 * with workspaces, Keys and Audit log for admins and owners.
 */
function MainNav({ current }: { current: string }) {
  const caps = useCapabilities();
  const ws = useWorkspace();
  const shown = (needs: Needs) => {
    if (needs === null) return true;
    if (needs === 'workspaces') return ws.available;
    if (needs === 'admin') return roleAtLeast(ws.role, 'admin');
    if (needs === 'workspace admin') return ws.available && roleAtLeast(ws.role, 'admin');
    return caps[needs];
  };
  return (
    <nav aria-label="Main">
      {NAV.filter(([, , needs]) => shown(needs)).map(([href, label]) => (
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
  const ws = useWorkspace();
  const workspaceUuid = ws.current?.uuid ?? null;
  const shownWorkspace = useRef(workspaceUuid);

  useEffect(() => {
    // An invitation link, and an MCP client's consent page with its request, come back to themselves after logging in.
    const back = path.startsWith('/invitations/') ? path : path === '/mcp/authorize' ? path + location.search : '';
    const next = back ? `?next=${encodeURIComponent(back)}` : '';
    if (!signedIn && !isPublic) navigate(`/login${next}`, { replace: true });
  }, [signedIn, isPublic]);
  useEffect(() => {
    if (signedIn && !isPublic && !ws.loaded) void loadWorkspaces();
  }, [signedIn, isPublic, ws.loaded]);
  // After a switch of workspace, a detail page (an agent, a task) belongs to the old one: go to its list.
  useEffect(() => {
    const before = shownWorkspace.current;
    shownWorkspace.current = workspaceUuid;
    if (before && workspaceUuid && before !== workspaceUuid && section(path) !== path)
      navigate(section(path), { replace: true });
  }, [workspaceUuid]);
  // Move focus to the new page's heading, so keyboard and screen-reader users start there.
  useEffect(() => {
    document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true });
  }, [path, ws.loaded]);

  if (!signedIn && !isPublic) return null;
  // The consent page stands alone (signed in, without the navigation): its own workspace picker is the only one.
  if (path === '/mcp/authorize')
    return (
      <main id="main" class="public">
        {ws.loaded ? <Page path={path} /> : <p class="muted">Loading…</p>}
        <ErrorBox error={ws.error} />
      </main>
    );
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
      <header class={ws.available ? 'topbar with-workspaces' : 'topbar'}>
        <Link href="/" class="brand">
          taskhook
        </Link>
        <WorkspaceSwitcher />
        {/* After the workspaces are known: the capability probes then act in the right one. */}
        {ws.loaded ? <MainNav current={section(path)} /> : <nav aria-label="Main" />}
        <div class="account" title={`Signed in as ${getEmail()}`}>
          <span class="muted email">{getEmail()}</span>
          <button
            type="button"
            class="ghost"
            onClick={() => {
              clearSession();
              resetCapabilities();
              resetWorkspaces();
              force((n) => n + 1);
              navigate('/login');
            }}
          >
            Log out
          </button>
        </div>
      </header>
      <main id="main">
        {/* Keyed by workspace: after a switch every page mounts afresh and loads that workspace's data. */}
        {ws.loaded ? <Page key={workspaceUuid ?? 'account'} path={path} /> : <p class="muted">Loading…</p>}
        <ErrorBox error={ws.error} />
      </main>
    </>
  );
}

render(<Shell />, document.getElementById('app') as HTMLElement);
