import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';
import { ago, dateTime } from './format';
import { BASE, navigate } from './router';

/** A status as the API spells it, coloured, with a shape so colour is never the only signal. */
export function Status({ value }: { value: string }) {
  return (
    <span class={`status status-${value}`}>
      <span class="status-dot" aria-hidden="true" />
      {value}
    </span>
  );
}

/** What to do about the workspace errors of the API, said plainly after its message. */
const HINTS: Record<string, string> = {
  LAST_OWNER: 'A workspace always keeps at least one owner: make another member owner first.',
  PERSONAL_WORKSPACE: 'Your personal workspace is yours alone: it cannot be shared, left or deleted.',
  FORBIDDEN: 'Your role in this workspace does not allow this; an admin or owner can change your role.',
  INVITATION_INVALID: 'This invitation link is unknown, expired, already used or revoked: ask for a new one.',
  INVITATION_EMAIL_MISMATCH:
    'This invitation was sent to another e-mail address: log out and log in with that address to accept it.',
};

/** An error of the API, with its message: never a blank screen. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError && error.code ? error.code : '';
  const hint = HINTS[code];
  return (
    <p class="error" role="alert">
      {code && `${code}: `}
      {message}
      {hint && <span class="hint"> {hint}</span>}
    </p>
  );
}

/** Shown when a list is empty: what it is for and what to do next. */
export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children}
    </div>
  );
}

/** A time as "3 min ago" with the exact time on hover. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  return (
    <time dateTime={iso} title={dateTime(iso)}>
      {ago(iso)}
    </time>
  );
}

/** An in-app link: a real anchor (open in new tab works) that navigates without a reload. */
export function Link(
  props: { href: string; children: ComponentChildren; class?: string } & AnchorHTMLAttributes<HTMLAnchorElement>,
) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

/** A secret shown once, in an element named "Secret", with a copy button. */
export function SecretBox({ value, note }: { value: string; note: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret-box">
      <p class="secret-note">{note}</p>
      <div class="secret-row">
        <output class="secret" aria-label="Secret">
          {value}
        </output>
        <button
          type="button"
          onClick={async () => {
            await navigator.clipboard?.writeText(value).catch(() => undefined);
            setCopied(true);
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  );
}

/** Loads data on mount and when `deps` change; `reload` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (value) => {
        if (!live) return;
        setData(value);
        setError(null);
      },
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload, setData };
}

/** Runs an action, keeping its pending state and error for the form that started it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

/** A page heading that also sets the document title (screen readers announce it on navigation). */
export function PageTitle({ children, title }: { children: ComponentChildren; title: string }) {
  useEffect(() => {
    document.title = `${title} · taskhook`;
  }, [title]);
  return <h1 tabIndex={-1}>{children}</h1>;
}
