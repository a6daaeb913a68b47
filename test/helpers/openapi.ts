// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked field by field.
export type Json = any;

/** Resolves a `$ref` of the OpenAPI document (or returns the schema as it is). */
export function resolve(doc: Json, schema: Json): Json {
  if (!schema?.$ref) return schema;
  const name = String(schema.$ref).split('/').at(-1) as string;
  return doc.components.schemas[name];
}
