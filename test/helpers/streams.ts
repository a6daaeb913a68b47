import type { AddressInfo } from 'node:net';
import type { TestApp } from './app.js';
import { within } from './tasks.js';

/** The base URL of a test app listening on a free port of 127.0.0.1. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/**
 * A task event stream read as raw text (comment lines included). `until` reads until the text
 * satisfies the predicate, `ended` until the server ends the stream; both fail rather than hang.
 */
export async function openRawStream(base: string, path: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, {
    headers: { accept: 'text/event-stream', ...headers },
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
