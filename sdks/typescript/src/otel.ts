/**
 * Runs a handler inside the OpenTelemetry context of its run, when the worker's process uses
 * OpenTelemetry: spans the handler starts (by hand or through instrumentations) get the run's
 * span as their parent, so they join the task's trace with no code. Without `@opentelemetry/api`
 * installed, the handler just runs. The API keeps its registry on the global object, so whichever
 * copy of the package is found here works with the context manager the application registered.
 */

// The few calls used, typed here so the SDK's types do not depend on the package.
interface OtelApi {
  context: {
    active(): unknown;
    with<T>(ctx: unknown, fn: () => T): T;
  };
  trace: {
    setSpanContext(
      ctx: unknown,
      spanContext: { traceId: string; spanId: string; traceFlags: number; isRemote: boolean },
    ): unknown;
  };
}

let loaded: Promise<OtelApi | null> | undefined;

function otelApi(): Promise<OtelApi | null> {
  // A variable specifier: bundlers and type checkers leave the optional package alone.
  const name = '@opentelemetry/api';
  loaded ??= import(name).then(
    (m: OtelApi & { default?: OtelApi }) => (m.context ? m : (m.default ?? null)),
    () => null,
  );
  return loaded;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Calls `fn` with the run's span (from its W3C traceparent) as the active OpenTelemetry parent. */
export async function withRunContext<T>(traceparent: string, fn: () => Promise<T>): Promise<T> {
  const match = TRACEPARENT.exec(traceparent);
  const api = match ? await otelApi() : null;
  if (!api || !match) return fn();
  const parent = api.trace.setSpanContext(api.context.active(), {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: Number.parseInt(match[3] as string, 16),
    isRemote: true,
  });
  return api.context.with(parent, fn);
}
