import { useState } from 'preact/hooks';
import { api } from '../api';
import type { ProviderCredential } from '../types';
import { Empty, ErrorBox, PageTitle, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Create or edit a provider credential; the API key is write-only (blank on edit keeps the old one). */
function ProviderForm(props: { credential?: ProviderCredential; onDone(): void; onClose(): void }) {
  const c = props.credential;
  const [name, setName] = useState(c?.name ?? '');
  const [baseUrl, setBaseUrl] = useState(c?.base_url ?? DEFAULT_BASE_URL);
  const [apiKey, setApiKey] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action
      .run(() =>
        c
          ? api.updateProvider(c.uuid, { name, base_url: baseUrl, ...(apiKey ? { api_key: apiKey } : {}) })
          : api.createProvider({ name, provider: 'openai', api_key: apiKey, base_url: baseUrl }),
      )
      .then((ok) => {
        if (!ok) return;
        props.onDone();
        props.onClose();
      });
  };
  return (
    <form class="card form" onSubmit={submit}>
      <h2>{c ? `Edit ${c.name}` : 'New provider credential'}</h2>
      <label>
        Name
        <input
          required
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
          title="Letters, digits, dot, underscore and dash; it prefixes model names, e.g. name/gpt-4o"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <label>
        Base URL
        <input type="url" required value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} />
      </label>
      <label>
        API key
        <input
          type="password"
          autoComplete="off"
          required={!c}
          placeholder={c ? `unchanged (${c.api_key_hint})` : ''}
          value={apiKey}
          onInput={(e) => setApiKey(e.currentTarget.value)}
        />
      </label>
      <p class="muted small">
        Any server speaking OpenAI's chat-completions protocol (OpenAI, vLLM, Ollama, LiteLLM, OpenRouter…). The key is
        stored encrypted and never shown again.
      </p>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          {c ? 'Save' : 'Create'}
        </button>
        <button type="button" class="ghost" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/** Provider credentials: the model providers the proxy and model-backed agents call with the user's keys. */
export function ProvidersPage() {
  const list = useLoad(() => api.providers(), []);
  const [editing, setEditing] = useState<ProviderCredential | 'new' | null>(null);
  const action = useAction();
  const manage = useCan('admin');
  const rows = list.data?.provider_credentials ?? [];
  return (
    <section>
      <div class="page-head">
        <PageTitle title="Providers">Providers</PageTitle>
        {manage && (
          <button type="button" class="primary" onClick={() => setEditing('new')} disabled={editing !== null}>
            New provider
          </button>
        )}
      </div>
      {editing && (
        <ProviderForm
          credential={editing === 'new' ? undefined : editing}
          onDone={list.reload}
          onClose={() => setEditing(null)}
        />
      )}
      <ErrorBox error={list.error ?? action.error} />
      {list.data && rows.length === 0 && !editing && (
        <Empty title="No provider credentials yet">
          <p>
            Add your model provider's API key with <strong>New provider</strong>; then call models through the proxy as{' '}
            <code>&lt;name&gt;/&lt;model&gt;</code>, or give an agent an OpenAI-compatible runtime.
          </p>
        </Empty>
      )}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" class="wide-only">
                  Base URL
                </th>
                <th scope="col">Key</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <tr key={c.uuid}>
                  <td class="strong">{c.name}</td>
                  <td class="mono small break wide-only">{c.base_url}</td>
                  <td class="mono">{c.api_key_hint}</td>
                  <td>
                    <Time iso={c.last_used_at} />
                  </td>
                  <td class="row-actions">
                    {manage && (
                      <>
                        <button type="button" class="small" aria-label={`Edit ${c.name}`} onClick={() => setEditing(c)}>
                          Edit
                        </button>
                        <button
                          type="button"
                          class="small danger"
                          aria-label={`Delete ${c.name}`}
                          disabled={action.busy}
                          onClick={() => {
                            if (!confirm(`Delete the provider credential "${c.name}"?`)) return;
                            void action.run(() => api.deleteProvider(c.uuid).then(list.reload));
                          }}
                        >
                          Delete
                        </button>
                      </>
                    )}
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
