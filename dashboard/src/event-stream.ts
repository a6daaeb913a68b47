/** Server-sent event parsing for the dashboard (the SDK keeps its own copy: it is not bundled for the browser). */
export interface ServerSentEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/** Parses a text/event-stream body into events (comments and retry fields are skipped). */
export async function* parseEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event = 'message';
  let data: string[] = [];
  const reader = body.getReader();
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r?\n/);
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(buffer[newline] === '\r' ? newline + 2 : newline + 1);
        if (line === '') {
          if (data.length > 0) yield { id, event, data: data.join('\n') };
          event = 'message';
          data = [];
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = value;
          else if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
        }
        newline = buffer.search(/\r?\n/);
      }
    }
  } finally {
    // A consumer that stops early (break, return, throw) closes the connection instead of leaving it open.
    if (!ended) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
