import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';

interface Operation {
  parameters?: Array<{ in: string; name: string; schema?: { format?: string } }>;
  // biome-ignore lint/suspicious/noExplicitAny: the document is walked field by field.
  responses?: Record<string, { content: Record<string, { schema: any }> }>;
}

/** The OpenAPI document describes the workspace header where it is read, and the FORBIDDEN code. */
describe.each(DATABASES.slice(0, 1))('the OpenAPI document and workspaces', (database) => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
  beforeAll(async () => {
    t = await buildTestApp(database);
    doc = (await call(t.app, 'GET', '/openapi.json')).json();
  });
  afterAll(() => t.close());

  const header = (path: string, method: string) =>
    doc.paths[path]?.[method]?.parameters?.find((p) => p.in === 'header' && p.name === 'x-taskhook-workspace');

  it('documents X-Taskhook-Workspace on the routes that read it, and not on the ones that ignore it', () => {
    for (const [path, method] of [
      ['/agent/list', 'get'],
      ['/agent/request/{id}', 'post'],
      ['/auth/platform_keys', 'post'],
      ['/telemetry/fetch_traces', 'get'],
      ['/spotlight/v1/chat/completions', 'post'],
    ] as const) {
      expect(header(path, method), `${method} ${path}`).toMatchObject({ schema: { format: 'uuid' } });
    }
    for (const [path, method] of [
      ['/auth/change_password', 'post'],
      ['/telemetry/ingest_http/v1/traces', 'post'],
      ['/health', 'get'],
    ] as const) {
      expect(header(path, method), `${method} ${path}`).toBeUndefined();
    }
  });

  it("documents the audit entry's client_request_id beside request_id", () => {
    const reply = doc.paths['/workspaces/{id}/audit_log']?.get?.responses?.['200']?.content['application/json']?.schema;
    const entry = reply.properties.entries.items as { properties: Record<string, { description?: string }> };
    expect(entry.properties.client_request_id?.description).toMatch(/X-Request-Id the client sent/);
    expect(entry.properties.request_id?.description).toMatch(/server's own id/);
  });

  it('documents TASKHOOK_MAX_WORKSPACES_PER_USER where it refuses', () => {
    const text = JSON.stringify([doc.paths['/workspaces']?.post, doc.paths['/workspaces/{id}/members/{userUuid}']]);
    expect(text.match(/TASKHOOK_MAX_WORKSPACES_PER_USER/g)).toHaveLength(2);
  });

  it('lists FORBIDDEN and the workspace codes among the error codes', () => {
    const text = JSON.stringify(doc);
    for (const code of [
      'FORBIDDEN',
      'PERSONAL_WORKSPACE',
      'LAST_OWNER',
      'INVITATION_INVALID',
      'INVITATION_EMAIL_MISMATCH',
    ]) {
      expect(text).toContain(`"${code}"`);
    }
  });
});
