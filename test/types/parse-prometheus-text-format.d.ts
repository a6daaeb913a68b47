declare module 'parse-prometheus-text-format' {
  /** Parses Prometheus text exposition into metric families. */
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
