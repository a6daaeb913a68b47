import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/connect.js';
import { TimestampSchema } from '../../http/common-schemas.js';
import { type Clock, iso } from '../../lib/time.js';

const DEEP_TIMEOUT_MS = 3000;
const DEGRADED_MS = 1000;

const BasicHealth = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy')]),
  database: Type.Union([Type.Literal('connected'), Type.Literal('disconnected')]),
});
const DeepHealth = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('unhealthy')]),
  database: Type.Object({
    status: Type.Union([Type.Literal('connected'), Type.Literal('disconnected')]),
    latency_ms: Type.Number({ description: 'Round trip of a trivial query, in milliseconds.' }),
  }),
  timestamp: TimestampSchema,
});

/** Times a ping, failing it after `timeoutMs`. */
async function timedPing(db: Db, timeoutMs: number): Promise<{ ok: boolean; ms: number }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('database ping timed out')), timeoutMs);
  });
  try {
    await Promise.race([db.ping(), timeout]);
    return { ok: true, ms: performance.now() - started };
  } catch {
    return { ok: false, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Health checks (docs/api.md §10). /health answers from a status a background loop
 * refreshes, so it never waits on the database; /health/deep runs a query now.
 */
export function createHealthModule(deps: { db: Db; clock: Clock; intervalMs: number }) {
  let connected = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function refresh() {
    connected = (await timedPing(deps.db, DEEP_TIMEOUT_MS)).ok;
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      void refresh().finally(schedule);
    }, deps.intervalMs);
    timer.unref();
  }

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => {
      await refresh();
      schedule();
    });
    app.addHook('onClose', async () => {
      stopped = true;
      clearTimeout(timer);
    });

    app.get(
      '/health',
      {
        schema: {
          tags: ['health'],
          summary: 'Basic health',
          description: `Answers from the database status refreshed in the background every ${deps.intervalMs} ms (TASKHOOK_HEALTH_INTERVAL_MS); 503 when the database is unreachable. The answer never waits on the database; the request is counted against the client address like any other (if the counter store does not answer within a second, it is let through uncounted).`,
          response: { 200: BasicHealth, 503: Type.Union([BasicHealth, Type.Ref('ErrorEnvelope')]) },
        },
      },
      async (_request, reply) =>
        connected
          ? { status: 'healthy' as const, database: 'connected' as const }
          : reply.code(503).send({ status: 'unhealthy' as const, database: 'disconnected' as const }),
    );

    app.get(
      '/health/deep',
      {
        schema: {
          tags: ['health'],
          summary: 'Deep health',
          description: `Runs a query now. healthy (200), degraded when it takes over ${DEGRADED_MS} ms (200), unhealthy when it fails or takes over ${DEEP_TIMEOUT_MS} ms (503).`,
          response: { 200: DeepHealth, 503: Type.Union([DeepHealth, Type.Ref('ErrorEnvelope')]) },
        },
      },
      async (_request, reply) => {
        const ping = await timedPing(deps.db, DEEP_TIMEOUT_MS);
        connected = ping.ok;
        const status = !ping.ok ? 'unhealthy' : ping.ms > DEGRADED_MS ? 'degraded' : 'healthy';
        return reply.code(ping.ok ? 200 : 503).send({
          status,
          database: { status: ping.ok ? 'connected' : 'disconnected', latency_ms: Math.round(ping.ms * 100) / 100 },
          timestamp: iso(deps.clock.now()),
        });
      },
    );
  }

  return { routes };
}
