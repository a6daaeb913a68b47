import { setFlagsFromString } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { openProcessDeps } from './process-deps.js';

/**
 * Starts the service: migrations, then listen. SIGTERM/SIGINT stop accepting connections,
 * let in-flight requests finish, then close the database pools.
 */
export async function startServer(config: Config): Promise<FastifyInstance> {
  // Read by V8 at each full collection, so setting it now (before the heap fills) takes effect:
  // a burst's garbage is collected at a quarter above the live heap instead of at several times it.
  if (config.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
  const runtime = await openProcessDeps(config);
  const app = await buildApp(config, runtime, { closeRuntime: true });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      app.log.error('graceful shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  await app.listen({ port: config.port, host: config.host });
  return app;
}
