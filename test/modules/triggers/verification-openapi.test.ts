import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';

interface JsonSchema {
  description?: string;
  oneOf?: JsonSchema[];
  discriminator?: { propertyName: string };
  properties?: Record<string, JsonSchema>;
  required?: string[];
  title?: string;
  enum?: string[];
}
interface Operation {
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
}

/** /openapi.json documents the `verification` union, its view, and the Slack challenge answer. */
describe.each(DATABASES.slice(0, 1))('the OpenAPI document and trigger verification', (database) => {
  let t: TestApp;
  let paths: Record<string, Record<string, Operation>>;
  beforeAll(async () => {
    t = await buildTestApp(database);
    paths = (await call(t.app, 'GET', '/openapi.json')).json().paths;
  });
  afterAll(() => t.close());

  const bodyOf = (path: string, method: string) =>
    paths[path]?.[method]?.requestBody?.content['application/json']?.schema as JsonSchema;

  it('documents verification on create and PATCH as a union tagged by type, each variant described', () => {
    for (const method of ['post', 'patch']) {
      const path = method === 'post' ? '/v1/agent/{id}/triggers' : '/v1/agent/{id}/triggers/{triggerId}';
      const verification = bodyOf(path, method).properties?.verification as JsonSchema;
      expect(verification.description).toBeTruthy();
      expect(verification.discriminator).toEqual({ propertyName: 'type' });
      expect(verification.oneOf?.map((v) => v.title)).toEqual([
        'SecretVerification',
        'GithubVerification',
        'StandardWebhooksVerification',
        'StripeVerification',
        'SlackVerification',
      ]);
      for (const variant of verification.oneOf ?? []) {
        for (const [name, field] of Object.entries(variant.properties ?? {})) {
          expect(field.description, `${variant.title}.${name}`).toBeTruthy();
        }
      }
      const stripe = verification.oneOf?.[3];
      expect(stripe?.required?.includes('secret')).toBe(method === 'post');
    }
  });

  it('shows verification in the trigger body and the 200 challenge answer at the webhook address', () => {
    const get = paths['/v1/agent/{id}/triggers/{triggerId}']?.get?.responses['200']?.content?.['application/json'];
    const view = get?.schema.properties?.verification;
    expect(view?.description).toBeTruthy();
    expect(view?.properties?.type?.enum).toEqual(['secret', 'github', 'standard_webhooks', 'stripe', 'slack']);
    const receive = paths['/v1/webhooks/triggers/{trigger_uuid}']?.post;
    expect(receive?.responses['200']?.content?.['application/json']?.schema.properties?.challenge).toBeDefined();
    expect(receive?.responses['202']).toBeDefined();
  });
});
