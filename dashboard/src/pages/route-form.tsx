import { useState } from 'preact/hooks';
import { api } from '../api';
import { type ModelRoute, type ProviderCredential, RETRY_ON, type RetryOn, type RouteTarget } from '../types';
import { ErrorBox, useAction } from '../ui';

/** Targets one route may list (the server's limit). */
const MAX_TARGETS = 8;

/** What each fallback condition means, as the docs say it. */
export const RETRY_LABELS: Record<RetryOn, string> = {
  '429': '429 (rate limited)',
  '5xx': '5xx (server error)',
  timeout: 'timeout',
  connection: 'connection failure',
};

/**
 * Create or edit a fallback route: its name, targets in order (credential + upstream model),
 * the failures that fall back to the next target, and the default cache TTL (blank: none).
 */
export function RouteForm(props: {
  route?: ModelRoute;
  credentials: ProviderCredential[];
  onDone(): void;
  onClose(): void;
}) {
  const r = props.route;
  const first = props.credentials[0]?.uuid ?? '';
  const [name, setName] = useState(r?.name ?? '');
  const [targets, setTargets] = useState<RouteTarget[]>(
    r?.targets.map((t) => ({ ...t })) ?? [{ provider_credential_uuid: first, model: '' }],
  );
  const [retryOn, setRetryOn] = useState<RetryOn[]>(r?.retry_on ?? [...RETRY_ON]);
  const [ttl, setTtl] = useState(r?.cache_ttl_seconds === null || !r ? '' : String(r.cache_ttl_seconds));
  const action = useAction();

  const setTarget = (i: number, change: Partial<RouteTarget>) =>
    setTargets(targets.map((t, j) => (j === i ? { ...t, ...change } : t)));
  const move = (i: number, by: number) => {
    const next = [...targets];
    const [moved] = next.splice(i, 1);
    if (moved) next.splice(i + by, 0, moved);
    setTargets(next);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    const input = {
      name,
      targets,
      retry_on: RETRY_ON.filter((v) => retryOn.includes(v)),
      cache_ttl_seconds: ttl === '' ? null : Number(ttl),
    };
    void action
      .run(() => (r ? api.updateRoute(r.uuid, input) : api.createRoute(input)))
      .then((ok) => {
        if (!ok) return;
        props.onDone();
        props.onClose();
      });
  };
  return (
    <form class="card form" onSubmit={submit}>
      <h2>{r ? `Edit route ${r.name}` : 'New route'}</h2>
      <label>
        Name
        <input
          required
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
          title="Letters, digits, dot, underscore and dash; called as model route:<name>"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <fieldset class="route-targets">
        <legend>Targets, tried in this order</legend>
        <ol>
          {targets.map((t, i) => (
            <li key={i} class="route-target">
              <select
                aria-label={`Target ${i + 1} credential`}
                required
                value={t.provider_credential_uuid}
                onChange={(e) => setTarget(i, { provider_credential_uuid: e.currentTarget.value })}
              >
                {props.credentials.map((c) => (
                  <option key={c.uuid} value={c.uuid}>
                    {c.name}
                  </option>
                ))}
              </select>
              <input
                aria-label={`Target ${i + 1} model`}
                required
                maxLength={256}
                placeholder="upstream model, e.g. gpt-4o-mini"
                value={t.model}
                onInput={(e) => setTarget(i, { model: e.currentTarget.value })}
              />
              <span class="row-actions">
                <button
                  type="button"
                  class="small"
                  aria-label={`Move target ${i + 1} up`}
                  disabled={i === 0}
                  onClick={() => move(i, -1)}
                >
                  ↑
                </button>
                <button
                  type="button"
                  class="small"
                  aria-label={`Move target ${i + 1} down`}
                  disabled={i === targets.length - 1}
                  onClick={() => move(i, 1)}
                >
                  ↓
                </button>
                <button
                  type="button"
                  class="small danger"
                  aria-label={`Remove target ${i + 1}`}
                  disabled={targets.length === 1}
                  onClick={() => setTargets(targets.filter((_, j) => j !== i))}
                >
                  Remove
                </button>
              </span>
            </li>
          ))}
        </ol>
        <button
          type="button"
          class="small"
          disabled={targets.length >= MAX_TARGETS}
          onClick={() => setTargets([...targets, { provider_credential_uuid: first, model: '' }])}
        >
          Add target
        </button>
      </fieldset>
      <fieldset class="route-retry">
        <legend>Fall back to the next target on</legend>
        {RETRY_ON.map((v) => (
          <label key={v} class="inline">
            <input
              type="checkbox"
              checked={retryOn.includes(v)}
              onChange={(e) => setRetryOn(e.currentTarget.checked ? [...retryOn, v] : retryOn.filter((x) => x !== v))}
            />
            {RETRY_LABELS[v]}
          </label>
        ))}
      </fieldset>
      <label>
        Cache answers for (seconds)
        <input
          type="number"
          min="1"
          max="86400"
          step="1"
          placeholder="not cached unless a call asks"
          value={ttl}
          onInput={(e) => setTtl(e.currentTarget.value)}
        />
      </label>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          {r ? 'Save' : 'Create'}
        </button>
        <button type="button" class="ghost" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
