import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

const BASE: Options = {
  allErrors: false,
  removeAdditional: false,
  useDefaults: true,
  strict: false,
  keywords: ['example'],
  // Unions tagged by a field (an agent's runtime `type`) report errors of the chosen variant.
  discriminator: true,
};

/**
 * Bodies are validated without any coercion (`"priority": "5"` is a 400) and unknown fields are
 * refused by each schema's `additionalProperties: false`. Query strings and path parameters
 * arrive as text, so they alone are coerced to their declared types.
 */
export function registerValidators(app: FastifyInstance) {
  const strict = new Ajv({ ...BASE, coerceTypes: false });
  const coercing = new Ajv({ ...BASE, coerceTypes: true });
  addFormats.default(strict);
  addFormats.default(coercing);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? strict.compile(schema) : coercing.compile(schema),
  );
}
