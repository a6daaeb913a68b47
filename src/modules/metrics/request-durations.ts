import { Histogram, type Registry } from 'prom-client';

type Label = 'method' | 'route' | 'status_class';
type Labels = Record<Label, string>;

interface Series {
  labels: Labels;
  /** Observations per bucket (not cumulative), in the order of the bounds. */
  perBucket: number[];
  sum: number;
  count: number;
}

interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Labels;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

/**
 * The request-duration histogram, observed on every response. prom-client's `observe` builds a
 * label hash string and looks it up in a plain object each time (about a microsecond per
 * request); here a series is found through maps keyed by the label values themselves (the
 * method and the route pattern are the same string objects request after request).
 *
 * It is exposed exactly as prom-client exposes a histogram (same lines, same order), so
 * scrapers see no difference; only the bookkeeping is ours.
 */
export class RequestDurations extends Histogram<Label> {
  readonly #bounds: number[];
  readonly #name: string;
  readonly #help: string;
  // Plain fields, not #private: prom-client's constructor calls reset() before they exist.
  private series = new Map<string, Map<string, Map<string, Series>>>();
  private order: Series[] = [];

  constructor(opts: { name: string; help: string; buckets: number[]; registry: Registry }) {
    super({
      name: opts.name,
      help: opts.help,
      labelNames: ['method', 'route', 'status_class'],
      buckets: opts.buckets,
      registers: [opts.registry],
    });
    this.#name = opts.name;
    this.#help = opts.help;
    this.#bounds = [...opts.buckets].sort((a, b) => a - b);
  }

  /** Records one request of `seconds`. */
  record(method: string, route: string, statusClass: string, seconds: number): void {
    let byRoute = this.series.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.series.set(method, byRoute);
    }
    let byStatus = byRoute.get(route);
    if (!byStatus) {
      byStatus = new Map();
      byRoute.set(route, byStatus);
    }
    let series = byStatus.get(statusClass);
    if (!series) {
      // The label order of prom-client's observe({method, route, status_class}) calls.
      const labels = { method, route, status_class: statusClass };
      series = { labels, perBucket: this.#bounds.map(() => 0), sum: 0, count: 0 };
      byStatus.set(statusClass, series);
      this.order.push(series);
    }
    // A value above every bound counts only in +Inf (the count), as prom-client does.
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= (bounds[i] as number)) {
        series.perBucket[i] = (series.perBucket[i] as number) + 1;
        break;
      }
    }
    series.sum += seconds;
    series.count += 1;
  }

  /** What the registry formats: prom-client's histogram samples, series in first-seen order. */
  #samples(): Sample[] {
    const bucketName = `${this.#name}_bucket`;
    const out: Sample[] = [];
    for (const series of this.order) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += series.perBucket[i] as number;
        const le = this.#bounds[i] as number;
        out.push({
          labels: { le },
          sharedLabels: series.labels,
          value: cumulative,
          metricName: bucketName,
          exemplar: null,
        });
      }
      const shared = series.labels;
      out.push(
        { labels: { le: '+Inf' }, sharedLabels: shared, value: series.count, metricName: bucketName, exemplar: null },
        { labels: {}, sharedLabels: shared, value: series.sum, metricName: `${this.#name}_sum`, exemplar: undefined },
        {
          labels: {},
          sharedLabels: shared,
          value: series.count,
          metricName: `${this.#name}_count`,
          exemplar: undefined,
        },
      );
    }
    return out;
  }

  /**
   * Read by the registry when it renders the text exposition; prom-client's own `get()` (the
   * JSON form) reads it too.
   */
  async getForPromString() {
    return { name: this.#name, help: this.#help, type: 'histogram', values: this.#samples(), aggregator: 'sum' };
  }

  override reset(): void {
    this.series = new Map();
    this.order = [];
  }
}
