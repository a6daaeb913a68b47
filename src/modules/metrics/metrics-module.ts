import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { afterCommit } from '../../db/transactions.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { ProcessDeps } from '../../process-deps.js';

const WEBHOOK_ROUTE = '/v1/webhooks/triggers/:trigger_uuid';

import { createMetrics } from './metrics-registry.js';

/**
 * Prometheus metrics. Off unless TASKHOOK_METRICS=true (then `GET /metrics` on the API, open to
 * anyone who reaches the port) or TASKHOOK_METRICS_PORT is set (then only on that port).
 * Every request's duration is observed either way, so turning exposure on loses no history.
 */
export function createMetricsModule(deps: { config: Config; runtime: ProcessDeps; events: Pick<EventHub, 'on'> }) {
  const metrics = createMetrics({ db: deps.runtime.db, clock: deps.runtime.clock });
  // Counted once the change has committed: a rolled-back claim is no claim.
  deps.events.on('task:changed', ({ trx, operation }) => {
    afterCommit(trx, () => metrics.taskTransitions.inc({ operation }));
  });
  const render = () => metrics.render();
  const contentType = metrics.registry.contentType;

  async function routes(app: FastifyInstance) {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpDuration.record(request.method, route, statusClass(reply.statusCode), reply.elapsedTime / 1000);
      if (reply.statusCode === 429) metrics.rateLimited.inc();
      if (route === WEBHOOK_ROUTE && request.method === 'POST') {
        metrics.webhookDeliveries.inc({ status: String(reply.statusCode) });
      }
      done();
    });
    if (deps.config.metrics && deps.config.metricsPort === undefined) {
      app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
        reply.type(contentType).send(await render()),
      );
    }
    if (deps.config.metricsPort !== undefined) {
      const server = serveMetrics(render, contentType, deps.runtime.logger);
      app.addHook('onReady', async () => {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(deps.config.metricsPort, deps.config.host, resolve);
        });
      });
      app.addHook('onClose', async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });
    }
  }

  // Not encapsulated: the duration hook must see every route of the app.
  return { metrics, routes: fp(routes, { name: 'metrics' }) };
}

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

/** `2xx` for 200; the same string each time for the usual classes. */
function statusClass(status: number): string {
  const index = Math.floor(status / 100) - 1;
  return STATUS_CLASSES[index] ?? `${index + 1}xx`;
}

/** A plain HTTP server that answers `GET /metrics` and 404 to everything else. */
function serveMetrics(render: () => Promise<string>, contentType: string, logger: ProcessDeps['logger']): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    render().then(
      (text) => res.writeHead(200, { 'content-type': contentType }).end(text),
      (err) => {
        logger.error({ err }, 'metrics could not be rendered');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
}
