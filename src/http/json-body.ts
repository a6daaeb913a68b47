import type { FastifyInstance } from 'fastify';
import { jsonHasNul, jsonTooDeep, MAX_JSON_DEPTH } from '../lib/json-depth.js';
import { invalid } from './errors.js';

/**
 * Replaces Fastify's JSON and text parsers with one JSON parser that refuses, as INVALID_REQUEST on
 * `body`, what cannot be stored or walked safely: nesting deeper than `MAX_JSON_DEPTH` and NUL
 * characters. An empty body parses as undefined (a body-less operation such as cancel). Fastify's
 * own `text/plain` parser goes too.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // An empty body on a body-less operation (e.g. cancel) is fine; schemas refuse it elsewhere.
    if (body === '') return done(null, undefined);
    if (jsonTooDeep(body as string)) {
      const reason = `nests deeper than ${MAX_JSON_DEPTH} levels`;
      return done(invalid('body', reason, `Request body ${reason}`), undefined);
    }
    if (jsonHasNul(body as string)) {
      const reason = 'contains a NUL character (U+0000), which cannot be stored';
      return done(invalid(nulField(body as string), reason, `Request body ${reason}`), undefined);
    }
    parseJson(request, body as string, done);
  });
}

/**
 * Where a refused NUL character is: `name` when it is in a top-level `name` string (names refuse
 * every control character on that field, docs/security.md), else `body`. Runs only on refusal.
 */
function nulField(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    const name = value && typeof value === 'object' ? (value as { name?: unknown }).name : undefined;
    return typeof name === 'string' && name.includes('\u0000') ? 'name' : 'body';
  } catch {
    return 'body';
  }
}
