import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import type { SpanRow } from './telemetry-fns.js';
import { SpanSchema } from './telemetry-schemas.js';

/**
 * Spans serialised per turn of the event loop. Serialising a 10,000-span trace (about 8 MB of
 * JSON) in one go held the loop for over a second on two busy cores, and every other request of
 * every workspace waited; 250 at a time keep each turn to milliseconds.
 */
export const SERIALIZE_CHUNK = 250;

const SpanList = Type.Array(SpanSchema);

/**
 * The body of `GET /telemetry/fetch_trace/:traceId` as a stream: the same bytes the route's
 * response schema would serialise (the envelope by the route's own serializer, the spans by one
 * compiled from the same span schema, so only the schema's fields go out), written a chunk of
 * spans per turn of the event loop.
 */
export function traceBody(
  reply: FastifyReply,
  trace: { trace_id: string; spans: SpanRow[]; truncated: boolean },
): Readable {
  const envelope = reply.serialize({ ...trace, spans: [] }) as string;
  const marker = '"spans":[';
  const at = envelope.indexOf(`${marker}]`) + marker.length;
  const serializeSpans = reply.compileSerializationSchema(SpanList as never) as unknown as (spans: unknown) => string;
  const { spans } = trace;
  async function* chunks() {
    yield envelope.slice(0, at);
    for (let i = 0; i < spans.length; i += SERIALIZE_CHUNK) {
      if (i > 0) await nextTurn();
      const list = serializeSpans(spans.slice(i, i + SERIALIZE_CHUNK));
      yield `${i > 0 ? ',' : ''}${list.slice(1, -1)}`;
    }
    yield envelope.slice(at);
  }
  return Readable.from(chunks(), { objectMode: false });
}
