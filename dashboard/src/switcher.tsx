import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api';
import { ErrorBox, useAction } from './ui';
import { switchWorkspace, useWorkspace } from './workspace';

/** A workspace as the switcher names it. */
function label(w: { name: string; personal: boolean }): string {
  return w.personal ? `${w.name} (personal)` : w.name;
}

function NewWorkspaceForm({ onClose }: { onClose(): void }) {
  const [name, setName] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const action = useAction();
  useEffect(() => input.current?.focus(), []);
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const created = await api.createWorkspace(name);
      onClose();
      await switchWorkspace(created.uuid);
    });
  };
  return (
    <form class="card form new-workspace" onSubmit={submit} aria-label="New workspace">
      <label>
        Name
        <input
          required
          maxLength={100}
          pattern=".*\S.*"
          value={name}
          ref={input}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={action.busy}>
          Create
        </button>
        <button type="button" class="ghost" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/**
 * The workspace switcher: which workspace every page shows and acts in (the choice is kept for
 * this tab), the caller's role in it, and "New workspace".
 */
export function WorkspaceSwitcher() {
  const ws = useWorkspace();
  const [creating, setCreating] = useState(false);
  const action = useAction();
  if (!ws.available) return null;
  return (
    <div class="switcher">
      <label class="switcher-label">
        <span class="sr-only">Workspace</span>
        <select
          value={ws.current?.uuid ?? ''}
          disabled={action.busy}
          onChange={(e) => {
            const uuid = e.currentTarget.value;
            void action.run(() => switchWorkspace(uuid));
          }}
        >
          {ws.list.map((w) => (
            <option key={w.uuid} value={w.uuid}>
              {label(w)}
            </option>
          ))}
        </select>
      </label>
      {ws.current && (
        <span class="role-badge" title="Your role in this workspace">
          {ws.current.role}
        </span>
      )}
      <button type="button" class="small" onClick={() => setCreating(true)} disabled={creating}>
        New workspace
      </button>
      {creating && <NewWorkspaceForm onClose={() => setCreating(false)} />}
      <ErrorBox error={action.error} />
    </div>
  );
}
