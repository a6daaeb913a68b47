import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { type Json, resolve } from '../helpers/openapi.js';

/** The OpenAPI document describes retry policies and delayed start wherever they appear. */
describe.each(DATABASES.slice(0, 1))('the OpenAPI document and task operations', (database) => {
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

  it("documents the agent's retry, the task's attempt fields, retry_after_seconds, run_at and delay_seconds", () => {
    const present = (schema: Json, where: string) => expect(schema, where).toBeDefined();
    const described = (schema: Json, where: string) => {
      present(schema, where);
      expect(typeof resolve(doc, schema).description, where).toBe('string');
    };
    described(requestProps('/agent', 'post').retry, 'agent create');
    described(requestProps('/agent/{id}', 'patch').retry, 'agent patch');
    const retry = resolve(doc, responseProps('/agent/{id}', 'get', '200').retry);
    expect(Object.keys(retry.properties).sort()).toEqual(['backoff', 'max_attempts']);
    const task = responseProps('/agent/{id}/task/{taskId}', 'get', '200');
    for (const field of ['attempt', 'max_attempts', 'last_error', 'available_at', 'rerun_of', 'parent_task_id'])
      described(task[field], field);
    described(requestProps('/agent/{id}/task/{taskId}/fail', 'post').retry_after_seconds, 'fail');
    described(requestProps('/agent/request/{id}', 'post').run_at, 'submit run_at');
    described(requestProps('/agent/request/{id}', 'post').delay_seconds, 'submit delay_seconds');
  });

  it('documents rerun (its overrides and rerun_of) and bulk actions (filter, answer)', () => {
    const rerun = doc.paths['/agent/{id}/task/{taskId}/rerun'].post;
    const overrides = resolve(doc, rerun.requestBody.content['application/json'].schema);
    const object = (overrides.anyOf as Json[]).map((s) => resolve(doc, s)).find((s) => s.type === 'object');
    expect(Object.keys(object.properties)).toEqual(
      expect.arrayContaining(['message', 'priority', 'metadata', 'run_at', 'delay_seconds', 'parent_task_id']),
    );
    expect(responseProps('/agent/{id}/task/{taskId}/rerun', 'post', '202').rerun_of).toBeDefined();
    const bulk = requestProps('/agent/{id}/tasks/bulk', 'post');
    expect(Object.keys(resolve(doc, bulk.filter).properties).sort()).toEqual([
      'created_after',
      'created_before',
      'metadata',
      'status',
      'task_ids',
    ]);
    expect(Object.keys(responseProps('/agent/{id}/tasks/bulk', 'post', '200')).sort()).toEqual([
      'acted',
      'action',
      'has_more',
      'matched',
      'rerun_task_ids',
      'task_ids',
    ]);
  });
});
