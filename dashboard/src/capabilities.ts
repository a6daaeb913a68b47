import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from './api';

export interface Capabilities {
  telemetry: boolean;
  providers: boolean;
}

let cached: Promise<Capabilities> | null = null;

/** A screen exists only when its API does: a 404 (an older server) hides it. */
async function available(probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (err) {
    return !(err instanceof ApiError && (err.status === 404 || err.status === 0));
  }
}

function probe(): Promise<Capabilities> {
  cached ??= Promise.all([available(api.telemetryAvailable), available(api.providersAvailable)]).then(
    ([telemetry, providers]) => ({ telemetry, providers }),
  );
  return cached;
}

/** Forgets what the server offers (after logging out: the next session asks again). */
export function resetCapabilities(): void {
  cached = null;
}

/** Which optional screens this server offers; both false until known. */
export function useCapabilities(): Capabilities {
  const [caps, setCaps] = useState<Capabilities>({ telemetry: false, providers: false });
  useEffect(() => {
    let live = true;
    probe().then((c) => live && setCaps(c));
    return () => {
      live = false;
    };
  }, []);
  return caps;
}
