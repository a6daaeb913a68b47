import { useState } from 'preact/hooks';
import { api } from '../api';
import { navigate } from '../router';
import type { Trigger } from '../types';
import { Empty, ErrorBox, Link, PageTitle, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { FreshSecret, SCHEMES } from './triggers';

function Deliveries({ agentId, triggerId }: { agentId: string; triggerId: string }) {
  const deliveries = useLoad(() => api.triggerDeliveries(agentId, triggerId), [agentId, triggerId]);
  const list = deliveries.data?.deliveries ?? [];
  return (
    <>
      <div class="list-head">
        <h2>Deliveries</h2>
        <button type="button" class="small" onClick={deliveries.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={deliveries.error} />
      {deliveries.data && list.length === 0 && (
        <Empty title="No deliveries yet">
          <p>Every request to the webhook URL shows up here, refused ones included, with the task it created.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">HTTP</th>
                <th scope="col">Delivery id</th>
                <th scope="col">Task or error</th>
              </tr>
            </thead>
            <tbody>
              {list.map((d) => (
                <tr key={`${d.delivery_id}-${d.received_at}`}>
                  <td>
                    <Time iso={d.received_at} />
                  </td>
                  <td>
                    <span class={`status status-${d.status_code < 300 ? 'delivered' : 'failed'}`}>{d.status_code}</span>
                  </td>
                  <td class="mono small break">{d.delivery_id}</td>
                  <td>
                    {d.task_id ? (
                      <Link href={`/agents/${agentId}/tasks/${d.task_id}`} class="mono">
                        task {d.task_id.slice(-8)}
                      </Link>
                    ) : (
                      <span class="muted">{d.error}</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** One trigger: its address, enable/disable, rotate the secret, delete, and its delivery log. */
export function TriggerPage({ agentId, triggerId }: { agentId: string; triggerId: string }) {
  const triggers = useLoad(() => api.triggers(agentId), [agentId]);
  const [rotated, setRotated] = useState<Trigger | null>(null);
  const action = useAction();
  const manage = useCan('admin');
  const trigger = triggers.data?.triggers.find((t) => t.uuid === triggerId);
  if (triggers.data && !trigger) return <ErrorBox error={new Error('This trigger does not exist (any more).')} />;
  return (
    <section>
      <p class="crumbs">
        <Link href="/">Agents</Link> / <Link href={`/agents/${agentId}/triggers`}>Triggers</Link> /{' '}
        <span>{trigger?.name}</span>
      </p>
      <ErrorBox error={triggers.error ?? action.error} />
      {trigger && (
        <>
          <div class="page-head">
            <PageTitle title={trigger.name}>
              {trigger.name}{' '}
              <span class={`status status-${trigger.enabled ? 'enabled' : 'disabled'}`}>
                {trigger.enabled ? 'enabled' : 'disabled'}
              </span>
            </PageTitle>
            {manage && (
              <div class="actions">
                <button
                  type="button"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(() =>
                      api.updateTrigger(agentId, triggerId, { enabled: !trigger.enabled }).then(triggers.reload),
                    )
                  }
                >
                  {trigger.enabled ? 'Disable' : 'Enable'}
                </button>
                <button
                  type="button"
                  disabled={action.busy}
                  onClick={() => {
                    if (!confirm('Rotate the secret? The old one keeps working for 24 hours.')) return;
                    void action.run(async () => setRotated(await api.rotateTrigger(agentId, triggerId)));
                  }}
                >
                  Rotate
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={action.busy}
                  onClick={() => {
                    if (!confirm(`Delete the trigger "${trigger.name}"? Its webhook URL stops working.`)) return;
                    void action.run(() =>
                      api.deleteTrigger(agentId, triggerId).then(() => navigate(`/agents/${agentId}/triggers`)),
                    );
                  }}
                >
                  Delete
                </button>
              </div>
            )}
          </div>
          {rotated && <FreshSecret trigger={rotated} />}
          <dl class="facts wide">
            <dt>Webhook URL</dt>
            <dd class="mono break">{trigger.webhook_url}</dd>
            {trigger.verification && (
              <>
                <dt>Verification</dt>
                <dd>
                  {SCHEMES[trigger.verification.type]}
                  {trigger.verification.tolerance_seconds !== undefined &&
                    ` (timestamps within ${trigger.verification.tolerance_seconds} s)`}
                </dd>
              </>
            )}
            <dt>Template</dt>
            <dd>
              <pre class="template">{trigger.message_template}</pre>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={trigger.created_at} />
            </dd>
          </dl>
          <Deliveries agentId={agentId} triggerId={triggerId} />
        </>
      )}
    </section>
  );
}
