import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { type Json, resolve } from '../helpers/openapi.js';

/** The OpenAPI document describes the model proxy's governance: budgets, routes, the cache, the record. */
describe.each(DATABASES.slice(0, 1))('the OpenAPI document and model proxy governance', (database) => {
  let t: TestApp;
  let doc: Json;
  beforeAll(async () => {
    t = await buildTestApp(database);
    doc = (await call(t.app, 'GET', '/openapi.json')).json();
  });
  afterAll(() => t.close());

  it('lists every budget and route endpoint', () => {
    const expected: Array<[string, string[]]> = [
      ['/spotlight/budgets', ['get']],
      ['/spotlight/budgets/account', ['get', 'patch']],
      ['/spotlight/budgets/agents/{agentId}', ['get', 'patch']],
      ['/spotlight/budgets/platform_keys/{keyUuid}', ['get', 'patch']],
      ['/spotlight/budgets/tasks/{taskId}', ['get']],
      ['/spotlight/routes', ['get', 'post']],
      ['/spotlight/routes/{uuid}', ['get', 'patch', 'delete']],
    ];
    for (const [path, methods] of expected) {
      expect(doc.paths[path], path).toBeDefined();
      for (const method of methods) expect(doc.paths[path][method], `${method} ${path}`).toBeDefined();
    }
    expect(doc.paths['/spotlight/routes/{uuid}'].delete.responses['409']).toBeDefined();
  });

  it('describes the call record fields of routes and the cache, and the route filter', () => {
    const record = resolve(
      doc,
      doc.paths['/spotlight/calls/{id}'].get.responses['200'].content['application/json'].schema,
    );
    for (const field of ['cost_usd', 'platform_key_uuid', 'route', 'attempts', 'cache_hit', 'usage_estimated'])
      expect(record.properties[field], field).toBeDefined();
    const attempt = resolve(doc, record.properties.attempts.items).properties;
    expect(Object.keys(attempt).sort()).toEqual([
      'error',
      'latency_ms',
      'provider_credential_uuid',
      'status_code',
      'upstream_model',
    ]);
    const params = doc.paths['/spotlight/calls'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['platform_key_uuid', 'route_uuid']));
    const totals = resolve(doc, doc.paths['/spotlight/usage'].get.responses['200'].content['application/json'].schema)
      .properties.totals.properties;
    expect(totals.cache_hits).toBeDefined();
  });

  it('explains routes, the cache header and budget refusals on the chat endpoint, and route_uuid on the runtime', () => {
    const chat = doc.paths['/spotlight/v1/chat/completions'].post.description as string;
    for (const word of [
      'route:<name>',
      'route_not_found',
      'X-Taskhook-Cache',
      'invalid_cache_header',
      'budget_exceeded',
    ])
      expect(chat, word).toContain(word);
    expect(JSON.stringify(doc)).toContain('route_uuid');
    expect(JSON.stringify(doc)).toContain('ROUTE_IN_USE');
  });
});
