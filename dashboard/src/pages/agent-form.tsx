import { useState } from 'preact/hooks';
import type { Agent, AgentInput } from '../types';
import { ErrorBox, useAction } from '../ui';

/** Create or edit an agent: name, description, concurrency and default timeout. */
export function AgentForm(props: { agent?: Agent; onSave(input: AgentInput): Promise<unknown>; onClose(): void }) {
  const a = props.agent;
  const [name, setName] = useState(a?.name ?? '');
  const [description, setDescription] = useState(a?.description ?? '');
  const [concurrency, setConcurrency] = useState(String(a?.concurrency ?? 10));
  const [timeout, setTimeoutValue] = useState(String(a?.default_timeout_seconds ?? 3600));
  const action = useAction();

  const submit = (e: Event) => {
    e.preventDefault();
    void action
      .run(() =>
        props.onSave({
          name: name.trim(),
          description: description.trim(),
          concurrency: Number(concurrency),
          default_timeout_seconds: Number(timeout),
        }),
      )
      .then((ok) => ok && props.onClose());
  };

  return (
    <form class="card form" onSubmit={submit} aria-label={a ? `Edit ${a.name}` : 'New agent'}>
      <h2>{a ? `Edit ${a.name}` : 'New agent'}</h2>
      <label>
        Name
        <input required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Description
        <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <div class="row">
        <label>
          Concurrency
          <input
            type="number"
            min={1}
            max={1000}
            required
            value={concurrency}
            onInput={(e) => setConcurrency(e.currentTarget.value)}
          />
        </label>
        <label>
          Default timeout (seconds)
          <input
            type="number"
            min={1}
            max={86400}
            required
            value={timeout}
            onInput={(e) => setTimeoutValue(e.currentTarget.value)}
          />
        </label>
      </div>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          {a ? 'Save' : 'Create'}
        </button>
        <button type="button" class="ghost" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
