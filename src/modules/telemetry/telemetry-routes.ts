import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../http/error-schemas.js';
import { principalOf } from '../../http/guard.js';
import {
  LogsQuery,
  LogsReply,
  TraceParams,
  TraceReply,
  TracesQuery,
  TracesReply,
  UsageQuery,
  UsageReply,
} from './telemetry-schemas.js';
import type { TelemetryService } from './telemetry-service.js';
import { traceBody } from './trace-body.js';

const tags = ['telemetry'];
const config = { auth: 'session' as const };

/** Reading telemetry back: JWT only, each user sees their own. */
export function telemetryRoutes(service: TelemetryService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.get(
      '/telemetry/fetch_traces',
      {
        config,
        schema: {
          tags,
          summary: 'List traces',
          description:
            'Newest first (earliest span start, then trace id), with cursor paging. Filters: from/to on the trace start, service, agent_id, task_id (some span of the trace has it), status.',
          querystring: TracesQuery,
          response: { 200: TracesReply, ...errorResponses([]) },
        },
      },
      async (request) => service.listTraces(who(request), request.query),
    );

    app.get(
      '/telemetry/fetch_trace/:traceId',
      {
        config,
        schema: {
          tags,
          summary: 'Get one trace',
          description: 'Every span of the trace, by start time then span id. The id is read case-insensitively.',
          params: TraceParams,
          response: { 200: TraceReply, ...errorResponses([404]) },
        },
      },
      // Streamed a chunk of spans per turn (trace-body.ts): one large trace must not stall others.
      async (request, reply) => {
        const trace = await service.getTrace(who(request), request.params.traceId);
        return reply.type('application/json; charset=utf-8').send(traceBody(reply, trace) as never);
      },
    );

    app.get(
      '/telemetry/fetch_logs',
      {
        config,
        schema: {
          tags,
          summary: 'List log records',
          description: 'Newest first, with cursor paging. severity_min keeps records at or above it.',
          querystring: LogsQuery,
          response: { 200: LogsReply, ...errorResponses([]) },
        },
      },
      async (request) => service.listLogs(who(request), request.query),
    );

    app.get(
      '/telemetry/fetch_usage',
      {
        config,
        schema: {
          tags,
          summary: 'Token usage',
          description:
            'GenAI token usage of spans started in the range, grouped by any of model, agent, day. An agent span counts only when no other span of its trace carries usage.',
          querystring: UsageQuery,
          response: { 200: UsageReply, ...errorResponses([]) },
        },
      },
      async (request) => service.usage(who(request), request.query),
    );
  };
}
