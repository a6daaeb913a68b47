import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Runtime } from '../../runtime.js';
import { ingestRoutes } from './ingest-routes.js';
import { createTaskTracer } from './task-tracer.js';
import { telemetryRepo } from './telemetry-repo.js';
import { telemetryRoutes } from './telemetry-routes.js';
import { createTelemetryService } from './telemetry-service.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The telemetry module, for wiring the service's own spans and running a retention sweep. */
    telemetry: TelemetryModule;
  }
}

const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Wires telemetry: the OTLP receiver, the fetch routes, and the retention sweep (at start, then
 * hourly; `sweepOnce` runs it on demand).
 */
export function createTelemetryModule(deps: {
  config: Config;
  runtime: Runtime;
  /** The name of a user's agent for task spans (null when it is gone). */
  agentName: (userUuid: string, agentUuid: string) => Promise<string | null>;
}) {
  const { config, runtime } = deps;
  const service = createTelemetryService({
    db: runtime.db,
    repo: telemetryRepo,
    clock: runtime.clock,
    retentionDays: config.telemetryRetentionDays,
    maxRecords: config.telemetryMaxRecords,
  });

  // The service's own spans of tasks; app.ts subscribes `tracer.onChange` to the tasks' changes.
  const tracer = createTaskTracer({
    record: service.recordServiceSpans,
    agentName: deps.agentName,
    logger: runtime.logger,
  });

  let running: Promise<number> | null = null;
  /** One sweep at a time; a sweep that fails is logged and tried again at the next tick. */
  function sweepOnce(): Promise<number> {
    running ??= service
      .sweepExpired()
      .catch((err) => {
        runtime.logger.warn({ err }, 'telemetry retention sweep failed');
        return 0;
      })
      .finally(() => {
        running = null;
      });
    return running;
  }

  async function routes(app: FastifyInstance) {
    let timer: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      void sweepOnce();
      timer = setInterval(() => void sweepOnce(), SWEEP_INTERVAL_MS);
      timer.unref();
    });
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await running;
      await tracer.flush();
    });
    await app.register(ingestRoutes(service, config.telemetryMaxBodyBytes));
    await app.register(telemetryRoutes(service));
  }

  return { service, tracer, sweepOnce, routes };
}

export type TelemetryModule = ReturnType<typeof createTelemetryModule>;
