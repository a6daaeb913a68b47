import { describe, expect, it } from 'vitest';
import { ErrorEnvelopeSchema } from '../../src/http/error-schemas.js';
import { ERROR_CODES } from '../../src/http/errors.js';

describe('the error envelope schema', () => {
  it('lists the codes as a string enum, which the serializer writes without running a validator', () => {
    // A union (anyOf) of literals made every error response run, and a route's first one compile,
    // a schema validator to pick the branch: a stall at the start of a login flood's 503s.
    const code = ErrorEnvelopeSchema.properties.error.properties.code as Record<string, unknown>;
    expect(code.anyOf).toBeUndefined();
    expect(code).toMatchObject({ type: 'string', enum: [...ERROR_CODES] });
  });
});
