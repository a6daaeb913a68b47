import { useState } from 'preact/hooks';
import { api } from '../api';
import type { IngestToken, PlatformKey, RateLimit, Role } from '../types';
import { Empty, ErrorBox, PageTitle, SecretBox, Time, useAction, useLoad } from '../ui';
import { useCan, useWorkspace } from '../workspace';
import { LimitsForm, limitsText, modelsText } from './limits-form';

type Row = (PlatformKey | IngestToken) & { name?: string };

function CredentialTable({
  rows,
  label,
  onRevoke,
  limits,
  onEdit,
}: {
  rows: Row[];
  label: string;
  onRevoke(uuid: string): void;
  /** Keys: their rate limits by uuid, and the edit of models and limits. */
  limits?: Map<string, RateLimit['limits']>;
  onEdit?(uuid: string): void;
}) {
  const withRoles = label === 'key' && rows.some((r) => 'role' in r && r.role);
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {label === 'key' && <th scope="col">Name</th>}
            {withRoles && <th scope="col">Role</th>}
            {label === 'key' && <th scope="col">Models</th>}
            {label === 'key' && <th scope="col">Limits</th>}
            <th scope="col">Prefix</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.uuid} data-uuid={r.uuid}>
              {label === 'key' && (
                <td>
                  <span class="strong">{r.name}</span>
                  {'created_by' in r && r.created_by && <div class="muted small">by {r.created_by.email}</div>}
                </td>
              )}
              {withRoles && <td>{'role' in r ? r.role : ''}</td>}
              {label === 'key' && <td class="key-models">{modelsText('models' in r ? r.models : null)}</td>}
              {label === 'key' && <td class="key-limits">{limitsText(limits?.get(r.uuid))}</td>}
              <td class="mono">{r.prefix}…</td>
              <td>
                <Time iso={r.created_at} />
              </td>
              <td class="last-used">
                <Time iso={r.last_used_at} />
              </td>
              <td>
                <span class={`status status-${r.revoked_at ? 'revoked' : 'active'}`}>
                  {r.revoked_at ? 'revoked' : 'active'}
                </span>
              </td>
              <td class="row-actions">
                {onEdit && (
                  <button
                    type="button"
                    class="small"
                    aria-label={`Edit models and limits of ${r.name ?? r.prefix}`}
                    onClick={() => onEdit(r.uuid)}
                  >
                    Edit
                  </button>
                )}
                {!r.revoked_at && (
                  <button
                    type="button"
                    class="small danger"
                    aria-label={`Revoke ${r.name ?? r.prefix}`}
                    onClick={() => onRevoke(r.uuid)}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function PlatformKeys() {
  const keys = useLoad(() => api.keys(), []);
  const rateLimits = useLoad(() => api.rateLimits(), []);
  const [editing, setEditing] = useState<string | null>(null);
  const limits = new Map(
    (rateLimits.data?.rate_limits ?? []).filter((r) => r.scope === 'platform_key').map((r) => [r.id, r.limits]),
  );
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('admin');
  const workspaces = useWorkspace().available;
  const [creating, setCreating] = useState(false);
  const [fresh, setFresh] = useState<string | null>(null);
  const action = useAction();
  const list = keys.data?.keys ?? [];
  const create = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      setFresh((await api.createKey(name, workspaces ? role : undefined)).key);
      setName('');
      setCreating(false);
      keys.reload();
    });
  };
  const revoke = (uuid: string) => {
    if (!confirm('Revoke this key? Anything using it stops working at once.')) return;
    void action.run(() => api.revokeKey(uuid).then(keys.reload));
  };
  return (
    <section class="block" aria-labelledby="keys-h">
      <div class="list-head">
        <h2 id="keys-h">Platform keys</h2>
        <button type="button" class="primary" onClick={() => setCreating(true)} disabled={creating}>
          New key
        </button>
      </div>
      <p class="muted small">
        For scripts, workers and CI: send it as <code>x-api-key</code> (or <code>Authorization: Bearer</code>).
      </p>
      {creating && (
        <form class="card form" onSubmit={create} aria-label="New key">
          <label>
            Name
            <input required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          {workspaces && (
            <>
              <label>
                Role
                <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
                  {(['admin', 'member', 'viewer'] as const).map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
              </label>
              <p class="muted small">A key never does more than the role of the person who made it.</p>
            </>
          )}
          <div class="actions">
            <button type="submit" class="primary" disabled={action.busy}>
              Create
            </button>
            <button type="button" class="ghost" onClick={() => setCreating(false)}>
              Close
            </button>
          </div>
        </form>
      )}
      {fresh && <SecretBox value={fresh} note="Copy this key now: it is shown only once and stored only as a hash." />}
      <ErrorBox error={keys.error ?? action.error} />
      {keys.data && list.length === 0 && (
        <Empty title="No platform keys yet">
          <p>Create one with New key to let a worker or a script call the API.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <CredentialTable rows={list} label="key" onRevoke={revoke} limits={limits} onEdit={setEditing} />
      )}
      {editing && (
        <LimitsForm
          key={editing}
          path={`platform_keys/${editing}`}
          keyUuid={editing}
          models={list.find((k) => k.uuid === editing)?.models ?? null}
          limits={limits.get(editing)}
          onSaved={() => {
            setEditing(null);
            keys.reload();
            rateLimits.reload();
          }}
          onClose={() => setEditing(null)}
        />
      )}
    </section>
  );
}

function IngestTokens() {
  const tokens = useLoad(() => api.ingestTokens(), []);
  const [fresh, setFresh] = useState<string | null>(null);
  const action = useAction();
  const list = tokens.data?.tokens ?? [];
  const revoke = (uuid: string) => {
    if (!confirm('Revoke this ingest token? Exporters using it are refused at once.')) return;
    void action.run(() => api.revokeIngestToken(uuid).then(tokens.reload));
  };
  return (
    <section class="block" aria-labelledby="tokens-h">
      <div class="list-head">
        <h2 id="tokens-h">Ingest tokens</h2>
        <button
          type="button"
          class="primary"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              setFresh((await api.createIngestToken()).token);
              tokens.reload();
            })
          }
        >
          New ingest token
        </button>
      </div>
      <p class="muted small">For OpenTelemetry exporters: only accepted for sending telemetry.</p>
      {fresh && <SecretBox value={fresh} note="Copy this ingest token now: it is shown only once." />}
      <ErrorBox error={tokens.error ?? action.error} />
      {tokens.data && list.length === 0 && (
        <Empty title="No ingest tokens yet">
          <p>Create one with New ingest token to send traces and logs from your agents.</p>
        </Empty>
      )}
      {list.length > 0 && <CredentialTable rows={list} label="token" onRevoke={revoke} />}
    </section>
  );
}

function SigningSecret() {
  const secret = useLoad(() => api.signingSecret(), []);
  const [shown, setShown] = useState(false);
  const action = useAction();
  return (
    <div class="block">
      <div class="list-head">
        <h2 id="signing-h">Callback signing secret</h2>
        <button
          type="button"
          disabled={action.busy}
          onClick={() => {
            if (!confirm('Rotate the signing secret? For 24 hours callbacks carry signatures of both secrets.')) return;
            void action.run(async () => {
              secret.setData(await api.rotateSigningSecret());
              setShown(true);
            });
          }}
        >
          Rotate
        </button>
      </div>
      <p class="muted small">
        Task callbacks are signed with it (Standard Webhooks: <code>webhook-signature</code>); verify them in your
        receiver.
      </p>
      <ErrorBox error={secret.error ?? action.error} />
      {secret.data &&
        (shown ? (
          <SecretBox value={secret.data.secret} note="Keep it in your receiver's configuration." />
        ) : (
          <button type="button" class="small" onClick={() => setShown(true)}>
            Show secret
          </button>
        ))}
      {secret.data && (
        <p class="muted small">
          Created <Time iso={secret.data.created_at} />
        </p>
      )}
    </div>
  );
}

/** Platform keys, ingest tokens and the callback signing secret (admins and owners). */
export function KeysPage() {
  if (!useCan('admin'))
    return (
      <section>
        <PageTitle title="Keys">Keys</PageTitle>
        <p class="notice">
          Keys, ingest tokens and the signing secret are managed by admins and owners of a workspace.
        </p>
      </section>
    );
  return (
    <section>
      <PageTitle title="Keys">Keys</PageTitle>
      <PlatformKeys />
      <IngestTokens />
      <SigningSecret />
    </section>
  );
}
