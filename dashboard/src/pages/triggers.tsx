import { useState } from 'preact/hooks';
import { api } from '../api';
import type { Trigger, VerificationType } from '../types';
import { Empty, ErrorBox, Link, SecretBox, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { AgentHooksPage, HookState, HookTable } from './hook-parts';

/** The signature schemes a trigger may expect, as the create form offers them. */
export const SCHEMES: Record<VerificationType, string> = {
  secret: 'Secret header or GitHub signature (default)',
  github: 'GitHub signature only',
  standard_webhooks: 'Standard Webhooks',
  stripe: 'Stripe',
  slack: 'Slack',
};

/** The `verification` a create sends: stripe and slack need the sender's secret; github and Standard Webhooks may take one. */
function verificationOf(type: VerificationType, secret: string): Record<string, unknown> | undefined {
  if (type === 'secret') return undefined;
  if (type === 'slack') return { type, signing_secret: secret };
  return secret === '' ? { type } : { type, secret };
}

function TriggerForm({ agentId, onCreated }: { agentId: string; onCreated(t: Trigger): void }) {
  const [name, setName] = useState('');
  const [template, setTemplate] = useState('Review {{payload.pull_request.html_url}}');
  const [scheme, setScheme] = useState<VerificationType>('secret');
  const [secret, setSecret] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const verification = verificationOf(scheme, secret);
    const input = { name, message_template: template, ...(verification ? { verification } : {}) };
    void action.run(async () => onCreated(await api.createTrigger(agentId, input)));
  };
  const secretNeeded = scheme === 'stripe' || scheme === 'slack';
  return (
    <form class="card form" onSubmit={submit} aria-label="New trigger">
      <h2>New trigger</h2>
      <label>
        Name
        <input required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Template
        <textarea required rows={3} value={template} onInput={(e) => setTemplate(e.currentTarget.value)} />
      </label>
      <label>
        Verification
        <select value={scheme} onChange={(e) => setScheme(e.currentTarget.value as VerificationType)}>
          {Object.entries(SCHEMES).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {scheme !== 'secret' && (
        <label>
          {secretNeeded ? 'Signing secret' : 'Signing secret (optional: generated when empty)'}
          <input
            type="password"
            autocomplete="off"
            required={secretNeeded}
            maxLength={255}
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
          />
        </label>
      )}
      <p class="muted small">
        <code>{'{{payload.a.b}}'}</code> inserts a field of the JSON the sender posts; <code>{'{{payload}}'}</code> the
        whole payload.
      </p>
      <ErrorBox error={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        Create
      </button>
    </form>
  );
}

/** The secret of a trigger just created or rotated: shown once, with how to call the webhook. */
export function FreshSecret({ trigger }: { trigger: Trigger }) {
  if (!trigger.webhook_secret) return null;
  return (
    <section class="card fresh" aria-label="Shown once">
      <SecretBox
        value={trigger.webhook_secret}
        note={
          trigger.verification && trigger.verification.type !== 'secret'
            ? 'Copy this signing secret now: it is shown only once. Give it to the sender, which signs every delivery with it.'
            : 'Copy this webhook secret now: it is shown only once. Senders put it in X-Webhook-Secret, or sign the body with it (X-Hub-Signature-256).'
        }
      />
      <p class="small">
        Webhook URL: <code class="break">{trigger.webhook_url}</code>
      </p>
    </section>
  );
}

function AgentTriggers({ agentId }: { agentId: string }) {
  const triggers = useLoad(() => api.triggers(agentId), [agentId]);
  const [creating, setCreating] = useState(false);
  const [fresh, setFresh] = useState<Trigger | null>(null);
  const manage = useCan('admin');
  const list = triggers.data?.triggers ?? [];
  return (
    <>
      <div class="list-head">
        <h2>Triggers</h2>
        {manage && (
          <button type="button" class="primary" onClick={() => setCreating(true)} disabled={creating}>
            New trigger
          </button>
        )}
      </div>
      {creating && (
        <TriggerForm
          agentId={agentId}
          onCreated={(t) => {
            setCreating(false);
            setFresh(t);
            triggers.reload();
          }}
        />
      )}
      {fresh && <FreshSecret trigger={fresh} />}
      <ErrorBox error={triggers.error} />
      {triggers.data && list.length === 0 && !creating && (
        <Empty title="No triggers yet">
          <p>
            A trigger gives this agent a webhook address: point GitHub (or anything that POSTs JSON) at it, and each
            delivery becomes a task.
            {manage ? (
              <>
                {' '}
                Create one with <strong>New trigger</strong>.
              </>
            ) : null}
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <HookTable headers={['Name', 'State', 'Webhook URL', 'Created']}>
          {list.map((t) => (
            <tr key={t.uuid}>
              <td>
                <Link href={`/agents/${agentId}/triggers/${t.uuid}`} class="strong">
                  {t.name}
                </Link>
              </td>
              <td>
                <HookState enabled={t.enabled} labels={['enabled', 'disabled']} />
              </td>
              <td class="mono small break">{t.webhook_url}</td>
              <td>
                <Time iso={t.created_at} />
              </td>
            </tr>
          ))}
        </HookTable>
      )}
    </>
  );
}

/** Triggers of one agent; from the main navigation, first pick the agent. */
export function TriggersPage({ agentId }: { agentId?: string }) {
  return (
    <AgentHooksPage agentId={agentId} room="triggers" title="Triggers">
      {(id) => <AgentTriggers agentId={id} />}
    </AgentHooksPage>
  );
}
