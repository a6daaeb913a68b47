import { useEffect } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Time, useAction, useLoad } from '../ui';
import { useCan } from '../workspace';

/** The signed callbacks sent for a task (callback_mode "webhook"), with a retry button. */
export function CallbackDeliveries({ agentId, taskId, status }: { agentId: string; taskId: string; status: string }) {
  const deliveries = useLoad(() => api.callbackDeliveries(agentId, taskId), [agentId, taskId]);
  const action = useAction();
  const work = useCan('member');
  // A state change may have queued a callback: look again.
  useEffect(() => deliveries.reload(), [status]);
  const list = deliveries.data?.deliveries ?? [];
  if (list.length === 0) return null;
  return (
    <div class="deliveries">
      <h2>Callbacks</h2>
      <ErrorBox error={deliveries.error ?? action.error} />
      <ul class="plain">
        {list.map((d) => {
          const last = d.attempts[d.attempts.length - 1];
          return (
            <li key={d.delivery_id} class="delivery">
              <div>
                <strong>{d.event_type}</strong> <span class={`status status-${d.status}`}>{d.status}</span>
              </div>
              <div class="muted small">
                {d.attempts.length} attempt{d.attempts.length === 1 ? '' : 's'}
                {last && (
                  <>
                    , last <Time iso={last.at} />: {last.status_code ?? last.error ?? 'no answer'}
                  </>
                )}
                {d.next_attempt_at && (
                  <>
                    , next <Time iso={d.next_attempt_at} />
                  </>
                )}
              </div>
              {work && (
                <button
                  type="button"
                  class="small"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(() => api.retryCallback(agentId, taskId, d.delivery_id).then(deliveries.reload))
                  }
                >
                  Retry
                </button>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
