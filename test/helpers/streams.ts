import type { AddressInfo } from 'node:net';
import type { TestApp } from './app.js';
import { type TaskView, within } from './tasks.js';

/** The base URL of a test app listening on a free port of 127.0.0.1. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/**
 * A task event stream read as raw text (comment lines included). `until` reads until the text
 * satisfies the predicate, `ended` until the server ends the stream; both fail rather than hang.
 */
export async function openRawStream(
  base: string,
  path: string,
  headers: Record<string, string>,
  /** A POST with this JSON body (an A2A streaming call); a GET without. */
  body?: unknown,
) {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, {
    ...(body === undefined
      ? {}
      : { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    headers: {
      accept: 'text/event-stream',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    signal: controller.signal,
  });
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let done = false;

  async function readMore(what: string) {
    if (!reader) throw new Error('no body');
    const chunk = await within(reader.read(), 10_000, what);
    if (chunk.done) done = true;
    else text += decoder.decode(chunk.value, { stream: true });
  }

  return {
    res,
    get text() {
      return text;
    },
    async until(predicate: (text: string) => boolean, what: string): Promise<string> {
      while (!predicate(text)) {
        if (done) throw new Error(`the stream ended before ${what}: ${text}`);
        await readMore(what);
      }
      return text;
    },
    async ended(): Promise<string> {
      while (!done) await readMore('the end of the stream');
      return text;
    },
    close: () => controller.abort(),
  };
}

/** One `text/event-stream` message of a task stream: `data` parsed as a task body. */
export interface SseEvent {
  id: number;
  event: string;
  data: TaskView;
}

/** Reads `text/event-stream` frames one at a time; `next()` is null once the server ends the stream. */
export function sseReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';

  function parse(frame: string): SseEvent | null {
    const fields: Record<string, string> = {};
    for (const line of frame.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      fields[name] = name in fields && name === 'data' ? `${fields[name]}\n${value}` : value;
    }
    if (fields.data === undefined) return null;
    return { id: Number(fields.id), event: fields.event ?? 'message', data: JSON.parse(fields.data) };
  }

  async function next(): Promise<SseEvent | null> {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parse(frame);
        if (event) return event;
        continue;
      }
      const chunk = await reader.read();
      if (chunk.done) return null;
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  }

  return {
    /** The next event; fails rather than hanging when none comes within `ms`. */
    next: (ms = 10_000): Promise<SseEvent | null> => within(next(), ms, 'event'),
    /** Every remaining event until the server ends the stream. */
    async rest(ms = 10_000): Promise<SseEvent[]> {
      const out: SseEvent[] = [];
      for (;;) {
        const event = await this.next(ms);
        if (!event) return out;
        out.push(event);
      }
    },
  };
}
