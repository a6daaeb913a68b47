import { useState } from 'preact/hooks';
import { api } from '../api';
import type { RateLimit } from '../types';
import { ErrorBox, useAction } from '../ui';

type Limits = RateLimit['limits'];

/** "All models" for null, else the patterns; "No models" for an empty list. */
export function modelsText(models: string[] | null | undefined): string {
  if (models === null || models === undefined) return 'All models';
  return models.length === 0 ? 'No models' : models.join(', ');
}

/** "60 requests / 100,000 tokens per minute", or "No limits". */
export function limitsText(limits: Limits | undefined): string {
  if (!limits || (limits.rpm === null && limits.tpm === null)) return 'No limits';
  const parts = [];
  if (limits.rpm !== null) parts.push(`${limits.rpm.toLocaleString('en-US')} requests`);
  if (limits.tpm !== null) parts.push(`${limits.tpm.toLocaleString('en-US')} tokens`);
  return `${parts.join(' / ')} per minute`;
}

const number = (text: string): number | null => (text.trim() === '' ? null : Number(text));

/**
 * The form that edits a key's models and limits, or an agent's limits: "Models" (comma-separated
 * patterns, empty for all models; keys only), "Requests per minute", "Tokens per minute", "Save".
 */
export function LimitsForm(props: {
  /** `platform_keys/<uuid>` or `agents/<uuid>`. */
  path: string;
  limits: Limits | undefined;
  /** A key's allowlist; absent for an agent (which has none). */
  models?: string[] | null | undefined;
  keyUuid?: string;
  onSaved(): void;
  onClose(): void;
}) {
  const [models, setModels] = useState(props.models ? props.models.join(', ') : '');
  const [rpm, setRpm] = useState(props.limits?.rpm?.toString() ?? '');
  const [tpm, setTpm] = useState(props.limits?.tpm?.toString() ?? '');
  const action = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      if (props.keyUuid !== undefined) {
        const patterns = models
          .split(',')
          .map((m) => m.trim())
          .filter((m) => m !== '');
        await api.updateKey(props.keyUuid, { models: patterns.length === 0 ? null : patterns });
      }
      await api.setRateLimit(props.path, { rpm: number(rpm), tpm: number(tpm) });
      props.onSaved();
    });
  };
  return (
    <form class="card form" onSubmit={save} aria-label="Edit limits">
      {props.keyUuid !== undefined && (
        <>
          <label>
            Models
            <input
              value={models}
              placeholder="All models"
              onInput={(e) => setModels(e.currentTarget.value)}
              aria-describedby="models-hint"
            />
          </label>
          <p id="models-hint" class="muted small">
            Comma-separated: <code>openai/gpt-4o</code>, <code>openai/*</code>, <code>route:*</code>. Empty: all models.
          </p>
        </>
      )}
      <label>
        Requests per minute
        <input
          type="number"
          min={1}
          max={1_000_000}
          step={1}
          value={rpm}
          onInput={(e) => setRpm(e.currentTarget.value)}
        />
      </label>
      <label>
        Tokens per minute
        <input
          type="number"
          min={1}
          max={1_000_000_000}
          step={1}
          value={tpm}
          onInput={(e) => setTpm(e.currentTarget.value)}
        />
      </label>
      <p class="muted small">Empty: no limit. Counted per UTC minute over every instance.</p>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          Save
        </button>
        <button type="button" class="ghost" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
