import { setFlagsFromString } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';

type StopSignal = 'SIGTERM' | 'SIGINT';

/**
 * Starts the service: migrations, then listen. SIGTERM/SIGINT stop accepting connections,
 * let in-flight requests finish, close the database pools and exit 0 (1 when that takes longer
 * than TASKHOOK_SHUTDOWN_TIMEOUT_MS).
 *
 * The signals are handled from the first moment, before the application's modules load: as PID 1 in
 * a container a signal without a handler is ignored, so a container stopped while it starts would
 * otherwise wait for SIGKILL. A signal during start-up ends it at its next step (a migration under
 * way finishes) and exits 0 without listening; the promise then resolves to null.
 */
export async function startServer(config: Config): Promise<FastifyInstance | null> {
  // Read by V8 at each full collection, so setting it now (before the heap fills) takes effect:
  // a burst's garbage is collected at a quarter above the live heap instead of at several times it.
  if (config.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
  const signals = watchStopSignals(config.shutdownTimeoutMs);
  // Loaded after the handlers are in place: loading them takes a noticeable part of a second.
  const { buildApp } = await import('./app.js');
  const { createLogger, openProcessDeps } = await import('./process-deps.js');
  const logger = createLogger(config);
  const stoppedEarly = async () => {
    const signal = await signals.received();
    if (signal) logger.info({ signal }, 'stopped while starting');
    return signal !== null;
  };
  if (await stoppedEarly()) process.exit(0);
  const runtime = await openProcessDeps(config, { logger });
  if (await stoppedEarly()) {
    await runtime.close();
    process.exit(0);
  }
  const app = await buildApp(config, runtime, { closeRuntime: true });
  signals.attach(app);
  if (await signals.received()) return null;
  await app.listen({ port: config.port, host: config.host });
  return app;
}

/** Handles SIGTERM and SIGINT from now on: closes the app once there is one, see startServer. */
function watchStopSignals(shutdownTimeoutMs: number) {
  let received: StopSignal | null = null;
  let app: FastifyInstance | null = null;
  let closing = false;
  const close = (server: FastifyInstance, signal: StopSignal) => {
    if (closing) return;
    closing = true;
    server.log.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err) => {
        server.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: StopSignal) => {
    if (received) return;
    received = signal;
    const force = setTimeout(() => {
      if (app) app.log.error('graceful shutdown took too long; exiting');
      else process.stderr.write('taskhook: start-up did not end in time after a stop signal; exiting\n');
      process.exit(1);
    }, shutdownTimeoutMs);
    force.unref();
    if (app) close(app, signal);
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  return {
    /** The signal received so far, after one turn of the event loop so that a delivered one was handled. */
    async received(): Promise<StopSignal | null> {
      await new Promise((resolve) => setImmediate(resolve));
      return received;
    },
    /** From now on a signal closes `server`; at once when one came already. */
    attach(server: FastifyInstance) {
      app = server;
      if (received) close(server, received);
    },
  };
}
