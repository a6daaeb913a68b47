import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { type Json, resolve } from '../helpers/openapi.js';

/** The OpenAPI document describes concurrency_key and concurrency_per_key wherever they appear. */
describe.each(DATABASES.slice(0, 1))('the OpenAPI document and concurrency keys', (database) => {
  let t: TestApp;
  let doc: Json;
  beforeAll(async () => {
    t = await buildTestApp(database);
    doc = (await call(t.app, 'GET', '/openapi.json')).json();
  });
  afterAll(() => t.close());

  const requestProps = (path: string, method: string) =>
    resolve(doc, doc.paths[path][method].requestBody.content['application/json'].schema).properties;
  const responseProps = (path: string, method: string, status: string) =>
    resolve(doc, doc.paths[path][method].responses[status].content['application/json'].schema).properties;

  it('documents the key on submit, task bodies, claim items and triggers, and the cap on agents', () => {
    const described = (schema: Json, where: string) => {
      expect(schema, where).toBeDefined();
      expect(typeof resolve(doc, schema).description, where).toBe('string');
    };
    described(requestProps('/agent/request/{id}', 'post').concurrency_key, 'submit');
    described(responseProps('/agent/{id}/task/{taskId}', 'get', '200').concurrency_key, 'task body');
    const claim = responseProps('/agent/{id}/tasks/claim', 'post', '200').tasks.items;
    described(resolve(doc, claim).properties.concurrency_key, 'claim item');
    described(requestProps('/agent', 'post').concurrency_per_key, 'agent create');
    described(requestProps('/agent/{id}', 'patch').concurrency_per_key, 'agent patch');
    described(responseProps('/agent/{id}', 'get', '200').concurrency_per_key, 'agent body');
    described(requestProps('/v1/agent/{id}/triggers', 'post').concurrency_key, 'trigger create');
    described(requestProps('/v1/agent/{id}/triggers/{triggerId}', 'patch').concurrency_key, 'trigger patch');
    described(responseProps('/v1/agent/{id}/triggers/{triggerId}', 'get', '200').concurrency_key, 'trigger body');
  });
});
