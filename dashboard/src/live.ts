// The SDK's parser is plain web-platform code (fetch streams, TextDecoder): one copy serves both.
import { parseEventStream } from '../../sdks/typescript/src/sse.js';
import { authHeaders, sessionRefused, toApiError } from './api';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'unavailable';

export interface FollowOptions<T> {
  onEvent(data: T): void;
  onState?(state: StreamState, detail?: string): void;
  /** The stream ends for good after this event (a task's final state). */
  isLast?(data: T): boolean;
}

const MAX_DELAY_MS = 15_000;

/**
 * Follows a server-sent event stream with fetch (EventSource cannot send the Authorization
 * header, and a credential never goes into a URL). A lost connection is reopened with
 * Last-Event-ID, so no change in between is missed. Returns a function that stops following.
 */
export function follow<T>(path: string, opts: FollowOptions<T>): () => void {
  const controller = new AbortController();
  let lastId: string | undefined;
  let delay = 500;

  const run = async () => {
    opts.onState?.('connecting');
    while (!controller.signal.aborted) {
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders() };
        if (lastId !== undefined) headers['last-event-id'] = lastId;
        const res = await fetch(path, { headers, signal: controller.signal, cache: 'no-store' });
        if (res.status === 401) return sessionRefused();
        if (res.status === 404) return opts.onState?.('unavailable', toApiError(404, await res.json()).message);
        if (!res.ok || !res.body) throw toApiError(res.status, await res.json().catch(() => null));
        opts.onState?.('live');
        delay = 500;
        for await (const event of parseEventStream(res.body)) {
          if (event.id !== undefined) lastId = event.id;
          const data = JSON.parse(event.data) as T;
          opts.onEvent(data);
          if (opts.isLast?.(data)) {
            controller.abort();
            return opts.onState?.('ended');
          }
        }
      } catch (err) {
        if (controller.signal.aborted) return;
        opts.onState?.('reconnecting', err instanceof Error ? err.message : undefined);
      }
      if (controller.signal.aborted) return;
      opts.onState?.('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  };
  void run();
  return () => controller.abort();
}
