import fc from 'fast-check';

/** The part of JSON Schema the OpenAPI document uses (TypeBox output, no $ref). */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
}

/** Strings a careless or hostile client sends: odd Unicode, control characters, injection-looking text. */
export const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u202dabc',
  '\u200b\u200c\u200d\ufeff',
  'e\u0301\u0301\u0301',
  '𝕿𝖆𝖘𝖐🎉👩‍👩‍👧‍👦',
  '\\u0000',
  '%00%2e%2e%2f',
  '../../../../etc/passwd',
  "'; drop table tasks; --",
  '{{payload}}',
  '{{',
  '$' + '{jndi:ldap://x}',
  '<script>alert(1)</script>',
  '-1',
  '1e309',
  'NaN',
  'null',
  'true',
  '[]',
  '__proto__',
  'constructor',
  'sk_service_0000000000000000000000000000000000000000000000000',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '\r\n\r\nX-Injected: 1',
];

/** Numbers at and around the edges a schema draws, and the ones JSON and JavaScript disagree on. */
export function boundaryNumbers(schema: JsonSchema): number[] {
  const out = [0, -1, 1, 0.5, -0.000001, 2 ** 31, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324];
  for (const edge of [schema.minimum, schema.maximum]) {
    if (edge !== undefined) out.push(edge, edge - 1, edge + 1, edge + 0.5, edge - 0.000001);
  }
  return out;
}

const typeOf = (schema: JsonSchema): string | undefined =>
  Array.isArray(schema.type) ? schema.type[0] : (schema.type ?? (schema.properties ? 'object' : undefined));

/** Any JSON value, small. */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

function stringFor(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
  if (schema.format === 'email') return fc.emailAddress();
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, minLength + 40);
  return fc.oneof(
    { arbitrary: fc.string({ minLength, maxLength }), weight: 4 },
    { arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme' }), weight: 2 },
    { arbitrary: fc.string({ minLength, maxLength, unit: 'binary' }), weight: 1 },
  );
}

function numberFor(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum ?? -1_000_000;
  const max = schema.maximum ?? 1_000_000;
  const inRange = integer
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  const edges = [schema.minimum, schema.maximum].filter((n): n is number => n !== undefined);
  return edges.length ? fc.oneof({ arbitrary: inRange, weight: 4 }, fc.constantFrom(...edges)) : inRange;
}

/** Values that the schema accepts (as far as JSON Schema can say: formats are approximated). */
export function validValue(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices?.length) return fc.oneof(...choices.map((s) => validValue(s, depth)));
  if (schema.allOf?.length) return validValue(Object.assign({}, ...schema.allOf), depth);
  switch (typeOf(schema)) {
    case 'string':
      return stringFor(schema);
    case 'integer':
      return numberFor(schema, true);
    case 'number':
      return numberFor(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = schema.items ? validValue(schema.items, depth + 1) : anyJson;
      const minLength = schema.minItems ?? 0;
      return fc.array(items, { minLength, maxLength: Math.min(schema.maxItems ?? 4, minLength + 4) });
    }
    case 'object': {
      const properties = schema.properties ?? {};
      const required = schema.required ?? [];
      const open = schema.additionalProperties !== false && !schema.properties;
      if (open || depth > 4) return fc.dictionary(fc.string({ maxLength: 10 }), anyJson, { maxKeys: 4 });
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, validValue(s, depth + 1)])),
        { requiredKeys: required.filter((k) => k in properties) },
      );
      return record as fc.Arbitrary<unknown>;
    }
    default:
      return anyJson;
  }
}

/** A value of the wrong JSON type for the schema (`"5"` for an integer, a number for a string…). */
export function wrongTyped(schema: JsonSchema): fc.Arbitrary<unknown> {
  const type = typeOf(schema);
  const all: Array<[string, fc.Arbitrary<unknown>]> = [
    ['string', fc.oneof(fc.string({ maxLength: 8 }), fc.constant('5'))],
    ['integer', fc.integer()],
    ['number', fc.double({ noNaN: true, noDefaultInfinity: true })],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.array(anyJson, { maxLength: 3 })],
    ['object', fc.dictionary(fc.string({ maxLength: 5 }), anyJson, { maxKeys: 3 })],
  ];
  // An integer is also a number; a float is the wrong type for an integer.
  const wrong = all.filter(([t]) => t !== type && !(type === 'number' && t === 'integer'));
  if (type === 'integer') wrong.push(['float', fc.constantFrom(1.5, -0.25, 1e-7)]);
  return fc.oneof(...wrong.map(([, arb]) => arb));
}

/** JSON nested `levels` deep: arrays or objects. */
export function deeplyNested(levels: number): fc.Arbitrary<unknown> {
  return fc.constantFrom('array', 'object').map((kind) => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i++) value = kind === 'array' ? [value] : { a: value };
    return value;
  });
}

/** A value the schema should refuse or that probes its edges: wrong type, boundary, odd or huge string, deep nesting. */
export function hostileValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const type = typeOf(schema);
  const options: Array<fc.WeightedArbitrary<unknown>> = [
    { arbitrary: wrongTyped(schema), weight: 4 },
    { arbitrary: fc.constantFrom(...ODD_STRINGS), weight: 3 },
    { arbitrary: fc.constantFrom(...boundaryNumbers(schema)), weight: type === 'integer' || type === 'number' ? 4 : 1 },
    { arbitrary: deeplyNested(70), weight: 1 },
  ];
  if (type === 'string' || type === undefined) {
    const max = schema.maxLength ?? 1_000;
    options.push({
      arbitrary: fc.constantFrom(max, max + 1, 100_001, 300_000).map((n) => 'x'.repeat(n)),
      weight: 2,
    });
    options.push({ arbitrary: fc.string({ unit: 'binary', maxLength: 60 }), weight: 2 });
  }
  return fc.oneof(...options);
}

/**
 * A JSON body for the schema: mostly valid, sometimes with one field made hostile, a required
 * field dropped, or an extra one added.
 */
export function bodyValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const valid = validValue(schema);
  const properties = Object.keys(schema.properties ?? {});
  const variants: Array<fc.WeightedArbitrary<unknown>> = [
    { arbitrary: valid, weight: 5 },
    { arbitrary: hostileValue(schema), weight: 1 },
  ];
  if (properties.length) {
    const asObject = valid.map((v) => (v && typeof v === 'object' && !Array.isArray(v) ? v : {})) as fc.Arbitrary<
      Record<string, unknown>
    >;
    variants.push({
      arbitrary: fc
        .tuple(asObject, fc.constantFrom(...properties))
        .chain(([v, key]) => hostileValue(schema.properties?.[key] ?? {}).map((bad) => ({ ...v, [key]: bad }))),
      weight: 4,
    });
    variants.push({
      arbitrary: fc.tuple(asObject, fc.constantFrom(...properties)).map(([v, key]) => {
        const { [key]: _dropped, ...rest } = v;
        return rest;
      }),
      weight: 1,
    });
    variants.push({
      arbitrary: fc
        .tuple(asObject, fc.constantFrom('extra', '__proto__', 'constructor', 'Message', ''), anyJson)
        .map(([v, key, value]) => ({ ...v, [key]: value })),
      weight: 1,
    });
  }
  return fc.oneof(...variants);
}
