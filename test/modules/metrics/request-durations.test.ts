import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurations } from '../../../src/modules/metrics/request-durations.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function pair() {
  const reference = new Registry();
  const ours = new Registry();
  const help = 'Time from request to response, by route pattern and status class.';
  const histogram = new Histogram({
    name: 'taskhook_http_request_duration_seconds',
    help,
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: BUCKETS,
    registers: [reference],
  });
  const durations = new RequestDurations({
    name: 'taskhook_http_request_duration_seconds',
    help,
    buckets: BUCKETS,
    registry: ours,
  });
  const observe = (method: string, route: string, statusClass: string, seconds: number) => {
    histogram.observe({ method, route, status_class: statusClass }, seconds);
    durations.record(method, route, statusClass, seconds);
  };
  return { reference, ours, histogram, durations, observe };
}

describe('the request-duration histogram', () => {
  it("is exposed exactly as prom-client's histogram of the same observations", async () => {
    const { reference, ours, observe } = pair();
    expect(await ours.metrics()).toBe(await reference.metrics());
    const routes = ['/agent/:id/task/:taskId', '/health', 'unmatched', '/odd "route" \\ with\na newline'];
    const values = [0, 0.0005, 0.0004999, 0.001, 0.7, 30, 30.0001, 1e9];
    for (let i = 0; i < 2_000; i++) {
      const seconds = i < values.length ? (values[i] as number) : ((i * 7919) % 10_007) / 997;
      observe(
        ['GET', 'POST', 'HEAD'][i % 3] as string,
        routes[(i * 7) % 4] as string,
        ['2xx', '4xx', '5xx'][(i * 13) % 3] as string,
        seconds,
      );
    }
    const text = await ours.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain(
      'taskhook_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/health",status_class="2xx"}',
    );
    expect(JSON.stringify(await ours.getMetricsAsJSON())).toBe(JSON.stringify(await reference.getMetricsAsJSON()));
  });

  it('starts empty again after a reset, like prom-client', async () => {
    const { reference, ours, histogram, durations, observe } = pair();
    observe('GET', '/health', '2xx', 0.002);
    histogram.reset();
    durations.reset();
    expect(await ours.metrics()).toBe(await reference.metrics());
    observe('POST', '/agent', '4xx', 0.2);
    expect(await ours.metrics()).toBe(await reference.metrics());
  });
});
