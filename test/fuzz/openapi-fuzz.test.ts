import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { createRouteContext, type RouteContext } from '../helpers/routes.js';
import {
  answerProblem,
  describeRequest,
  type Fixtures,
  type FuzzRequest,
  nothing,
  operationsOf,
  requestsFor,
} from './fuzz-requests.js';

/**
 * The OpenAPI fuzzer (docs/benchmarks.md, "Fuzzing"): requests generated from /openapi.json,
 * valid and hostile, with valid credentials, against every route. No answer may be a 5xx the
 * documents do not promise, and every error must be in the shape its path speaks.
 * Replay a failure with the FUZZ_SEED and FUZZ_PATH it prints; FUZZ_RUNS changes the count.
 */
const REQUESTS = Number(process.env.FUZZ_RUNS ?? 10_000);
const SEED = process.env.FUZZ_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED);
const PATH = process.env.FUZZ_PATH;
/** Requests sent at once in one run of the property. */
const BATCH = 8;

/** Collects garbage now (RSS and heap figures mean little otherwise). */
function collectGarbage() {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}

const MiB = 1024 * 1024;

describe.each(DATABASES)('OpenAPI fuzzer on $name', (database) => {
  let t: TestApp;
  let fixtures: Fixtures;
  let requests: fc.Arbitrary<FuzzRequest>;
  let operations: string[];

  beforeAll(async () => {
    t = await buildTestApp(database, {
      // No request may reach the network: every name fails to resolve at once (a provider's
      // default address included), so the model proxy answers 502 upstream_unreachable.
      lookup: async (host) => {
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      },
      config: { proxyTimeoutMs: 2_000 },
    });
    const user = await createUser(t);
    const kept = await createRouteContext(t, user);
    const spare = await createRouteContext(t, user);
    const both = (pick: (ctx: RouteContext) => string) => ({ keep: [pick(kept.ctx)], spare: [pick(spare.ctx)] });
    const gone = (await createAgent(t, user)).uuid;
    await call(t.app, 'DELETE', `/agent/${gone}`, { token: user.token });
    fixtures = {
      jwt: user.token,
      key: user.key,
      ingestToken: kept.secrets.ingestToken,
      triggerSecret: kept.secrets.trigger,
      ids: {
        agent: both((c) => c.agent),
        // The agent-wide task stream stays open while its agent lives.
        goneAgent: { keep: [gone], spare: [] },
        task: { keep: [kept.ctx.task, kept.ctx.runningTask, kept.ctx.doneTask], spare: [spare.ctx.task] },
        // Only finished tasks: the event stream of an open task stays open.
        finishedTask: both((c) => c.doneTask),
        trigger: both((c) => c.trigger),
        platformKey: both((c) => c.platformKey),
        ingestToken: both((c) => c.ingestToken),
        providerCredential: both((c) => c.providerCredential),
        delivery: { keep: [nothing()], spare: [] },
        trace: both((c) => c.trace),
        modelCall: both((c) => c.modelCall),
        provider: { keep: ['github', 'google'], spare: [] },
      },
    };
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const ops = operationsOf(doc);
    operations = ops.map((op) => `${op.method} ${op.path}`);
    requests = requestsFor(ops, fixtures);
  }, 120_000);
  afterAll(() => t.close());

  async function send(req: FuzzRequest) {
    return t.app.inject({
      method: req.method as 'GET',
      url: req.url,
      headers: req.headers,
      ...(req.payload === undefined ? {} : { payload: req.payload }),
    });
  }

  it(`${REQUESTS} generated requests: no undocumented 5xx, every error in its documented shape, memory back`, async () => {
    const started = performance.now();
    // Warm-up (not counted): code paths compiled, caches and pools at their working size.
    const warmUp = Math.ceil(Math.min(2_000, REQUESTS / 5) / BATCH);
    for (const batch of fc.sample(fc.array(requests, { minLength: BATCH, maxLength: BATCH }), {
      numRuns: warmUp,
      seed: SEED + 1,
    })) {
      await Promise.all(batch.map(send));
    }
    collectGarbage();
    const before = process.memoryUsage();

    const seen = new Map<string, number>();
    const statuses = new Map<number, number>();
    const result = await fc.check(
      fc.asyncProperty(fc.array(requests, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const answers = await Promise.all(batch.map(send));
        for (const [i, res] of answers.entries()) {
          const req = batch[i] as FuzzRequest;
          seen.set(req.operation, (seen.get(req.operation) ?? 0) + 1);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          const problem = answerProblem(req, res);
          if (problem) throw new Error(`${problem}\n  ${describeRequest(req)}`);
        }
      }),
      { seed: SEED, numRuns: Math.ceil(REQUESTS / BATCH), ...(PATH ? { path: PATH } : {}), endOnFailure: false },
    );
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (result.failed) {
      throw new Error(
        `The fuzzer found a bad answer (${database.name}); replay with FUZZ_SEED=${result.seed} FUZZ_PATH=${result.counterexamplePath}\n${String(result.errorInstance)}`,
      );
    }

    collectGarbage();
    const after = process.memoryUsage();
    const byStatus = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    console.info(
      `fuzz ${database.name}: seed ${SEED}, ${REQUESTS} requests in ${seconds} s; ${byStatus}; ` +
        `rss ${(before.rss / MiB).toFixed(0)} → ${(after.rss / MiB).toFixed(0)} MiB, ` +
        `heap ${(before.heapUsed / MiB).toFixed(0)} → ${(after.heapUsed / MiB).toFixed(0)} MiB`,
    );
    // Every operation of the document was tried (a replay sends only its counterexample).
    if (!PATH) expect(operations.filter((op) => !seen.has(op))).toEqual([]);
    // Memory is back: the heap after collection is within 10 % of its level before the run. The
    // process's RSS is printed but not asserted: in-process it also holds the test runner's and
    // fast-check's memory and what the allocator keeps after a peak; the soak (bench/soak.js)
    // checks a real server's RSS instead.
    if (!PATH) expect(after.heapUsed).toBeLessThan(before.heapUsed * 1.1);
  }, 600_000);
});
