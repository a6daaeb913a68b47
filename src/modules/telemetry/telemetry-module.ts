import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { ProcessDeps } from '../../process-deps.js';
import { ingestRoutes } from './ingest-routes.js';
import { createTaskTracer } from './task-tracer.js';
import { telemetryRepo } from './telemetry-repo.js';
import { telemetryRoutes } from './telemetry-routes.js';
import { createTelemetryService } from './telemetry-service.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The telemetry module, for wiring the service's own spans. */
    telemetry: TelemetryModule;
  }
}

/**
 * Wires telemetry: the OTLP receiver, the fetch routes and the service's own spans (housekeeping
 * deletes what is past its retention).
 */
export function createTelemetryModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  /** The name of a user's agent for task spans (null when it is gone). */
  agentName: (workspaceUuid: string, agentUuid: string) => Promise<string | null>;
  /** Where every saved change of a task is heard, inside its transaction (`task:changed`). */
  events: Pick<EventHub, 'on'>;
}) {
  const { config, runtime } = deps;
  const service = createTelemetryService({
    db: runtime.db,
    repo: telemetryRepo,
    clock: runtime.clock,
    retentionDays: config.telemetryRetentionDays,
    maxRecords: config.telemetryMaxRecords,
  });

  // The service's own spans of tasks, one per transition that ends a run, a wait or the task.
  const tracer = createTaskTracer({
    record: service.recordServiceSpans,
    agentName: deps.agentName,
    logger: runtime.logger,
  });
  deps.events.on('task:changed', tracer.onChange);

  async function routes(app: FastifyInstance) {
    app.addHook('onClose', async () => tracer.flush());
    await app.register(ingestRoutes(service, config.telemetryMaxBodyBytes));
    await app.register(telemetryRoutes(service));
  }

  return { service, tracer, routes };
}

export type TelemetryModule = ReturnType<typeof createTelemetryModule>;
