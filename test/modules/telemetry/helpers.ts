import { randomBytes } from 'node:crypto';
import type { TestApp } from '../../helpers/app.js';
import { call } from '../../helpers/app.js';
import type { TestUser } from '../../helpers/factories.js';

/** A new ingest token of the user, made through the API. */
export async function ingestToken(t: TestApp, user: TestUser): Promise<string> {
  const res = await call(t.app, 'POST', '/auth/generate_ingest_token', { token: user.token });
  if (res.statusCode !== 201) throw new Error(`ingest token creation failed: ${res.body}`);
  return res.json().token as string;
}

/** A random lowercase hex id of `bytes` bytes. */
export function hexId(bytes: number): string {
  const out = randomBytes(bytes).toString('hex');
  return /^0+$/.test(out) ? hexId(bytes) : out;
}

/** One OTLP/JSON span with sensible defaults. */
export function jsonSpan(overrides: Record<string, unknown> = {}) {
  return {
    traceId: hexId(16),
    spanId: hexId(8),
    name: 'op',
    kind: 1,
    startTimeUnixNano: '1795361443211333262',
    endTimeUnixNano: '1795361443711333262',
    ...overrides,
  };
}

/** An ExportTraceServiceRequest in JSON holding the given spans under one resource and scope. */
export function tracesRequest(spans: unknown[], service = 'svc') {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [{ scope: { name: 'scope', version: '1.0' }, spans }],
      },
    ],
  };
}

/** POSTs a JSON OTLP body to an ingest path with the token. */
export function postOtlpJson(t: TestApp, signal: 'traces' | 'logs', token: string, body: unknown) {
  return t.app.inject({
    method: 'POST',
    url: `/telemetry/ingest_http/v1/${signal}`,
    headers: { authorization: token, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
