import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from './api';
import { chosenWorkspace, rememberWorkspace } from './session';
import type { Role, Workspace } from './types';

const ORDER: Role[] = ['viewer', 'member', 'admin', 'owner'];

/** Whether `role` includes everything `least` may do (viewer < member < admin < owner). */
export function roleAtLeast(role: Role, least: Role): boolean {
  return ORDER.indexOf(role) >= ORDER.indexOf(least);
}

/**
 * The workspaces of the signed-in user and the one the dashboard acts in. `available` is false
 * when the server has no workspaces (an older server answers 404): then everything acts as the
 * user's own account, with every control.
 */
export interface WorkspaceState {
  loaded: boolean;
  available: boolean;
  list: Workspace[];
  current: Workspace | null;
  /** The caller's role in the current workspace (`owner` when the server has no workspaces). */
  role: Role;
  error: unknown;
}

const INITIAL: WorkspaceState = {
  loaded: false,
  available: false,
  list: [],
  current: null,
  role: 'owner',
  error: null,
};

let state: WorkspaceState = INITIAL;
let loading: Promise<void> | null = null;
const listeners = new Set<() => void>();

function publish(next: WorkspaceState): void {
  state = next;
  for (const listener of listeners) listener();
}

/** The uuid requests act in (also when the list is still loading: the choice kept for this tab). */
export function currentWorkspaceUuid(): string | null {
  return state.current?.uuid ?? chosenWorkspace();
}

/**
 * Asks the server for the user's workspaces and settles on the current one: the one chosen in
 * this tab if the user is still a member of it, else the personal workspace (listed first).
 */
export function loadWorkspaces(): Promise<void> {
  loading ??= api
    .workspaces()
    .then(
      ({ workspaces }) => {
        const current = workspaces.find((w) => w.uuid === chosenWorkspace()) ?? workspaces[0] ?? null;
        rememberWorkspace(current?.uuid ?? null);
        publish({
          loaded: true,
          available: true,
          list: workspaces,
          current,
          role: current?.role ?? 'owner',
          error: null,
        });
      },
      (error: unknown) => {
        // A refused session goes back to logging in; the next session asks again.
        if (error instanceof ApiError && error.status === 401) return publish(INITIAL);
        const missing = error instanceof ApiError && error.status === 404;
        if (missing) rememberWorkspace(null);
        publish({ ...INITIAL, loaded: true, error: missing ? null : error });
      },
    )
    .finally(() => {
      loading = null;
    });
  return loading;
}

/**
 * After the user left a workspace: acts in `next` (null: the first listed, the personal one) and
 * asks for the list afresh. A load begun before the change may answer with the list as it was,
 * so it is waited out rather than shared.
 */
export async function leftWorkspace(next: string | null): Promise<void> {
  rememberWorkspace(next);
  await loading;
  await loadWorkspaces();
}

/** Acts in another workspace from now on; the caller re-renders every page for it. */
export async function switchWorkspace(uuid: string): Promise<void> {
  rememberWorkspace(uuid);
  const known = state.list.find((w) => w.uuid === uuid);
  if (known) publish({ ...state, current: known, role: known.role });
  await loadWorkspaces();
}

/** Forgets the workspaces (after logging out: the next session asks again). */
export function resetWorkspaces(): void {
  publish(INITIAL);
}

/** The workspace state, re-rendering the caller when it changes. */
export function useWorkspace(): WorkspaceState {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((n) => n + 1);
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return state;
}

/** Whether the caller's role in the current workspace includes `least`. */
export function useCan(least: Role): boolean {
  return roleAtLeast(useWorkspace().role, least);
}
