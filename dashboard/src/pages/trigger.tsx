import { useState } from 'preact/hooks';
import { api } from '../api';
import type { Trigger } from '../types';
import { Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';
import { HookHead, HookLog, HookPage, TaskOr } from './hook-parts';
import { FreshSecret, SCHEMES } from './triggers';

function Deliveries({ agentId, triggerId }: { agentId: string; triggerId: string }) {
  const deliveries = useLoad(() => api.triggerDeliveries(agentId, triggerId), [agentId, triggerId]);
  return (
    <HookLog
      title="Deliveries"
      load={deliveries}
      items={deliveries.data?.deliveries ?? []}
      empty={[
        'No deliveries yet',
        'Every request to the webhook URL shows up here, refused ones included, with the task it created.',
      ]}
      headers={['Received', 'HTTP', 'Delivery id', 'Task or error']}
      row={(d) => (
        <tr key={`${d.delivery_id}-${d.received_at}`}>
          <td>
            <Time iso={d.received_at} />
          </td>
          <td>
            <span class={`status status-${d.status_code < 300 ? 'delivered' : 'failed'}`}>{d.status_code}</span>
          </td>
          <td class="mono small break">{d.delivery_id}</td>
          <td>
            <TaskOr agentId={agentId} taskId={d.task_id}>
              {d.error}
            </TaskOr>
          </td>
        </tr>
      )}
    />
  );
}

/** One trigger: its address, enable/disable, rotate the secret, delete, and its delivery log. */
export function TriggerPage({ agentId, triggerId }: { agentId: string; triggerId: string }) {
  const triggers = useLoad(() => api.triggers(agentId), [agentId]);
  const [rotated, setRotated] = useState<Trigger | null>(null);
  const action = useAction();
  const manage = useCan('admin');
  return (
    <HookPage
      agentId={agentId}
      room="triggers"
      title="Triggers"
      hook={triggers.data?.triggers.find((t) => t.uuid === triggerId)}
      loaded={triggers.data !== undefined}
      error={triggers.error ?? action.error}
      missing="This trigger does not exist (any more)."
    >
      {(trigger) => (
        <>
          <HookHead
            name={trigger.name}
            enabled={trigger.enabled}
            states={['enabled', 'disabled']}
            toggle={['Disable', 'Enable']}
            manage={manage}
            action={action}
            onToggle={() => api.updateTrigger(agentId, triggerId, { enabled: !trigger.enabled }).then(triggers.reload)}
            onDelete={() => api.deleteTrigger(agentId, triggerId)}
            question={`Delete the trigger "${trigger.name}"? Its webhook URL stops working.`}
            back={`/agents/${agentId}/triggers`}
            extra={
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
            }
          />
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
    </HookPage>
  );
}
