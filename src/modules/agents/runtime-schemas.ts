import { type TObject, type TUnsafe, Type } from '@sinclair/typebox';
import { StrictObject } from '../../http/common-schemas.js';

/**
 * An agent's runtime as stored and passed between rooms: its `type` and the fields of that type's
 * variant. The variants themselves belong to the push runtimes that run them
 * (`src/modules/runtimes/<name>/<name>-schema.ts`), which the app registers; the rooms below
 * (agents, tasks) read only `type`, and `headers` where a variant has them.
 */
export interface Runtime {
  type: string;
  /** Sent with each request to the agent; values sealed at rest and masked in answers. */
  headers?: Record<string, string>;
  [field: string]: unknown;
}

/** Header names refused in a runtime's `headers`: the service sets these itself. */
export const FORBIDDEN_HEADER_NAMES = [
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'a2a-version',
] as const;

const anyCase = (word: string) => [...word].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
/** An RFC 9110 token, other than the forbidden names and any `webhook-*` name (in any case). */
export const HEADER_NAME_PATTERN = `^(?!(?:${FORBIDDEN_HEADER_NAMES.map(anyCase).join('|')})$)(?!${anyCase('webhook-')})[!#$%&'*+.^_\`|~0-9A-Za-z-]+$`;
export const MAX_RUNTIME_HEADERS = 20;
/** What every response shows instead of a header value; sent back on PATCH it keeps the stored value. */
export const HEADER_MASK = '********';

/** A runtime's `headers` field, for variants that call the agent over HTTP. */
export const RuntimeHeadersSchema = Type.Record(
  Type.String({ pattern: HEADER_NAME_PATTERN }),
  Type.String({ maxLength: 4096 }),
  {
    additionalProperties: false,
    maxProperties: MAX_RUNTIME_HEADERS,
    description:
      'Sent with every request to the agent (e.g. its credential). At most 20; names are RFC 9110 tokens other than host, content-length, content-type, connection, transfer-encoding, a2a-version and webhook-*; values up to 4,096 characters. Stored encrypted and shown as "********"; "********" on PATCH keeps the stored value.',
  },
);

/** Bounds of a URL field of a runtime. */
export const RUNTIME_URL_LIMITS = { minLength: 1, maxLength: 2048 };

/**
 * The built-in runtime: external workers pull the agent's tasks. The tasks room serves it
 * (`POST /agent/:id/tasks/claim`); every other variant is a push runtime's.
 */
export const WorkerRuntimeSchema = StrictObject(
  { type: Type.Literal('worker', { description: 'External workers pull tasks (POST /agent/:id/tasks/claim).' }) },
  { title: 'WorkerRuntime' },
);

export interface RuntimeSchemas {
  /** An agent's runtime as answered (header values masked): the plain union of the variants. */
  response: TUnsafe<Runtime>;
  /**
   * The runtime in request bodies: a `oneOf` with a discriminator on `type`, so a bad field is
   * reported against the variant the client chose (`runtime.model`) and an unknown type against
   * `runtime`. Only request validation knows the discriminator; responses use the plain union.
   */
  input: TUnsafe<Runtime>;
}

/**
 * The `runtime` field's schemas from the registered variants (the worker's first). Each variant
 * is a strict object whose `type` is a literal of its own.
 */
export function runtimeSchemas(variants: readonly TObject[]): RuntimeSchemas {
  const all = [WorkerRuntimeSchema, ...variants];
  // Each variant in a few words: its type literal's own description.
  const kinds = all.map((v) => `${v.properties.type?.const}: ${v.properties.type?.description}`);
  const RUNTIME_DESCRIPTION = `How the agent carries out tasks (default {"type": "worker"}). ${kinds.join(' ')}`;
  return {
    response: Type.Unsafe<Runtime>(Type.Union(all, { description: RUNTIME_DESCRIPTION })),
    input: Type.Unsafe<Runtime>({
      // Ajv's discriminator checks neither: anything but an object with a type would pass.
      type: 'object',
      required: ['type'],
      oneOf: all,
      discriminator: { propertyName: 'type' },
      description: RUNTIME_DESCRIPTION,
    }),
  };
}
