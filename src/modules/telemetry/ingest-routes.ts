import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { handleError } from '../../http/error-handler.js';
import { principalOf } from '../../http/guard.js';
import { decodeLogsJson, decodeTracesJson, OtlpShapeError } from './otlp-json.js';
import { decodeLogsProto, decodeTracesProto, encodeResponseProto, encodeStatusProto } from './otlp-proto.js';
import type { IngestOutcome, TelemetryService } from './telemetry-service.js';

const inflate = promisify(gunzip);

type Encoding = 'json' | 'protobuf';
type Signal = 'traces' | 'logs';

/** A refusal answered with an OTLP `google.rpc.Status` body in the request's encoding. */
class OtlpError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    message: string,
    readonly encoding: Encoding,
  ) {
    super(message);
  }
}

const RPC_CODE = { 400: 3, 413: 8, 415: 3 } as const;
const CONTENT_TYPES: Record<string, Encoding> = { 'application/json': 'json', 'application/x-protobuf': 'protobuf' };

function sendOtlpError(err: OtlpError, reply: FastifyReply) {
  const code = RPC_CODE[err.status];
  reply.code(err.status);
  if (err.encoding === 'protobuf') {
    return reply.type('application/x-protobuf').send(Buffer.from(encodeStatusProto(code, err.message)));
  }
  return reply.type('application/json').send(JSON.stringify({ code, message: err.message }));
}

function encodingOf(request: FastifyRequest): Encoding {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const encoding = CONTENT_TYPES[type];
  if (!encoding) {
    throw new OtlpError(415, 'Content-Type must be application/json or application/x-protobuf', 'json');
  }
  const contentEncoding = String(request.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (contentEncoding !== 'identity' && contentEncoding !== 'gzip') {
    throw new OtlpError(415, 'Content-Encoding must be gzip or identity', 'json');
  }
  return encoding;
}

/** Reads the body as sent, refusing it as soon as it passes the limit. */
async function readBody(stream: Readable | undefined, max: number, encoding: Encoding): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > max) throw new OtlpError(413, `Request body is larger than ${max} bytes`, encoding);
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

/** Inflates a gzip body; inflation stops at the limit, so a gzip bomb costs no more than the limit. */
async function gunzipBody(body: Buffer, max: number, encoding: Encoding): Promise<Buffer> {
  try {
    return await inflate(body, { maxOutputLength: max });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new OtlpError(413, `Inflated request body is larger than ${max} bytes`, encoding);
    }
    throw new OtlpError(400, 'Request body is not valid gzip', encoding);
  }
}

/** Runs a decoder, turning any failure into a 400 (a stack overflow on absurd nesting included). */
function decodeOr400<T>(signal: Signal, encoding: Encoding, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof OtlpShapeError) throw new OtlpError(400, `Invalid request: ${err.message}`, encoding);
    const what = encoding === 'protobuf' ? 'protobuf' : 'JSON';
    throw new OtlpError(400, `Request body is not a valid ${signal} export request in ${what}`, encoding);
  }
}

function ingest(service: TelemetryService, user: string, signal: Signal, encoding: Encoding, body: Buffer) {
  const proto = encoding === 'protobuf';
  if (signal === 'traces') {
    const batches = decodeOr400(signal, encoding, () =>
      proto ? decodeTracesProto(body) : decodeTracesJson(body.toString('utf8')),
    );
    return service.ingestSpans(user, batches);
  }
  const batches = decodeOr400(signal, encoding, () =>
    proto ? decodeLogsProto(body) : decodeLogsJson(body.toString('utf8')),
  );
  return service.ingestLogs(user, batches, createHash('sha256').update(body).digest('hex'));
}

function sendOutcome(reply: FastifyReply, signal: Signal, encoding: Encoding, outcome: IngestOutcome) {
  const partial = outcome.message ? { rejected: outcome.rejected, message: outcome.message } : null;
  if (encoding === 'protobuf') {
    return reply.type('application/x-protobuf').send(Buffer.from(encodeResponseProto(signal, partial)));
  }
  const counter = signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
  const body = partial ? { partialSuccess: { [counter]: partial.rejected, errorMessage: partial.message } } : {};
  return reply.type('application/json').send(JSON.stringify(body));
}

const DESCRIPTIONS: Record<Signal, string> = {
  traces:
    'OTLP/HTTP trace export (ExportTraceServiceRequest) in protobuf or JSON, optionally gzip-compressed. Authenticate with an ingest token (`Authorization: <token>` or `Bearer <token>`). Answers 200 with an ExportTraceServiceResponse in the request encoding (partialSuccess when some spans were refused); 400, 413 and 415 carry a google.rpc.Status body.',
  logs: 'OTLP/HTTP log export (ExportLogsServiceRequest) in protobuf or JSON, optionally gzip-compressed. Authenticate with an ingest token. Answers 200 with an ExportLogsServiceResponse in the request encoding (partialSuccess when some records were refused); 400, 413 and 415 carry a google.rpc.Status body.',
};

/** The OTLP/HTTP receiver: `/telemetry/ingest_http/v1/traces` and `/v1/logs`. */
export function ingestRoutes(service: TelemetryService, maxBytes: number) {
  return async function routes(app: FastifyInstance) {
    // This protocol brings its own bodies: every content type reaches the handler as a stream,
    // which checks the type, the encoding and the size itself, in the order OTLP clients expect.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    app.setErrorHandler((err: FastifyError, request, reply) =>
      err instanceof OtlpError ? sendOtlpError(err, reply) : handleError(err, request, reply),
    );

    for (const signal of ['traces', 'logs'] as const) {
      app.post(
        `/telemetry/ingest_http/v1/${signal}`,
        {
          config: { auth: 'ingest' },
          schema: { tags: ['telemetry'], summary: `Export ${signal} (OTLP/HTTP)`, description: DESCRIPTIONS[signal] },
        },
        async (request, reply) => {
          const user = principalOf(request).workspaceUuid;
          const encoding = encodingOf(request);
          const length = Number(request.headers['content-length'] ?? 0);
          if (length > maxBytes) throw new OtlpError(413, `Request body is larger than ${maxBytes} bytes`, encoding);
          let body = await readBody(request.body as Readable | undefined, maxBytes, encoding);
          if (
            String(request.headers['content-encoding'] ?? '')
              .trim()
              .toLowerCase() === 'gzip'
          ) {
            body = await gunzipBody(body, maxBytes, encoding);
          }
          return sendOutcome(reply, signal, encoding, await ingest(service, user, signal, encoding, body));
        },
      );
    }
  };
}
