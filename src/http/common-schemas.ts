import { type TSchema, Type } from '@sinclair/typebox';

export const UuidSchema = Type.String({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  description: 'A UUID.',
});

export const TimestampSchema = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp.' });
export const NullableTimestamp = Type.Union([TimestampSchema, Type.Null()]);

/** The highest page a list answers: deeper offsets only cost the database and serve no one. */
export const MAX_PAGE = 10_000;

/** `page` (1–10,000, default 1) and `limit` (1–100, default 20) query parameters. */
export const PageQuerySchema = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, 1 to 10,000.' }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100.' }),
});

export const PaginationSchema = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  total_pages: Type.Integer(),
});

/** The pagination object for a page of `total` items. */
export function pagination(page: number, limit: number, total: number) {
  return { page, limit, total, total_pages: Math.ceil(total / limit) };
}

/** A strict object: unknown fields are a 400. */
export function StrictObject<T extends Record<string, TSchema>>(properties: T, options: object = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** The body of an operation that takes none: absent, `null` or `{}`; any field in it is a 400. */
export const NoBody = Type.Union([StrictObject({}), Type.Null()], { description: 'No body, or an empty object.' });

export const NoContent = Type.Null({ description: 'No content.' });

/**
 * A string from a fixed list, as `{type: "string", enum}`: validated the same as a union of
 * literals, but serialised without trying each branch (fast-json-stringify checks anyOf at run time).
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: object = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
