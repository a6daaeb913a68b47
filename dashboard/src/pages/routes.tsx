import { useState } from 'preact/hooks';
import { api } from '../api';
import type { ModelRoute } from '../types';
import { Empty, ErrorBox, Link, PageTitle, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { ModelUsageSection } from './model-usage';
import { RETRY_LABELS, RouteForm } from './route-form';

/** A route's cache policy in words. */
const cacheText = (ttl: number | null) => (ttl === null ? 'only when a call asks' : `${ttl.toLocaleString('en-US')} s`);

/**
 * Fallback routes of the model proxy: named, ordered lists of targets called as model
 * `route:<name>`; admins create, edit and delete them, others only read. Below, the proxy's
 * usage with its cache hit rate.
 */
export function RoutesPage() {
  const list = useLoad(() => api.routes(), []);
  const providers = useLoad(() => api.providers(), []);
  const [editing, setEditing] = useState<ModelRoute | 'new' | null>(null);
  const action = useAction();
  const manage = useCan('admin');
  const rows = list.data?.routes ?? [];
  const credentials = providers.data?.provider_credentials ?? [];
  const names = new Map(credentials.map((c) => [c.uuid, c.name] as const));
  const noCredentials = providers.data !== undefined && credentials.length === 0;
  return (
    <section>
      <div class="page-head">
        <PageTitle title="Routes">Routes</PageTitle>
        {manage && (
          <button
            type="button"
            class="primary"
            onClick={() => setEditing('new')}
            disabled={editing !== null || noCredentials || !providers.data}
          >
            New route
          </button>
        )}
      </div>
      <p class="muted small">
        A route tries its targets in order: when one fails in a way the route falls back on, the next is called. Call it
        through the proxy with <code>model: "route:&lt;name&gt;"</code>.
      </p>
      {manage && noCredentials && (
        <p class="muted">
          A route's targets are provider credentials: <Link href="/providers">add one on Providers</Link> first.
        </p>
      )}
      {editing && (
        <RouteForm
          key={editing === 'new' ? 'new' : editing.uuid}
          route={editing === 'new' ? undefined : editing}
          credentials={credentials}
          onDone={list.reload}
          onClose={() => setEditing(null)}
        />
      )}
      <ErrorBox error={list.error ?? providers.error ?? action.error} />
      {list.data && rows.length === 0 && !editing && (
        <Empty title="No routes yet">
          <p>
            A route such as <code>route:chat</code> can call one model and fall back to another credential or model when
            the first is rate limited, failing or unreachable.
          </p>
        </Empty>
      )}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table aria-label="Routes">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Targets</th>
                <th scope="col">Falls back on</th>
                <th scope="col">Cache</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.uuid} data-route={r.name}>
                  <td>
                    <div class="strong">{r.name}</div>
                    <code class="small nowrap">model: "route:{r.name}"</code>
                  </td>
                  <td>
                    <ol class="target-list" aria-label={`Targets of ${r.name}`}>
                      {r.targets.map((t, i) => (
                        <li key={i}>
                          {names.get(t.provider_credential_uuid) ?? <span class="muted">unknown credential</span>}
                          {' · '}
                          <span class="mono small">{t.model}</span>
                        </li>
                      ))}
                    </ol>
                  </td>
                  <td class="small">
                    {r.retry_on.length === 0 ? (
                      <span class="muted">never</span>
                    ) : (
                      r.retry_on.map((v) => RETRY_LABELS[v]).join(', ')
                    )}
                  </td>
                  <td class="small">{cacheText(r.cache_ttl_seconds)}</td>
                  <td class="actions-cell">
                    {manage && (
                      <div class="row-actions">
                        <button
                          type="button"
                          class="small"
                          aria-label={`Edit ${r.name}`}
                          disabled={editing !== null || !providers.data}
                          onClick={() => setEditing(r)}
                        >
                          Edit
                        </button>
                        <button
                          type="button"
                          class="small danger"
                          aria-label={`Delete ${r.name}`}
                          disabled={action.busy}
                          onClick={() => {
                            if (!confirm(`Delete the route "${r.name}"?`)) return;
                            void action.run(() => api.deleteRoute(r.uuid).then(list.reload));
                          }}
                        >
                          Delete
                        </button>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ModelUsageSection />
    </section>
  );
}
