import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, TimestampSchema, UuidSchema } from '../../../http/common-schemas.js';

/** Routes one workspace may keep. */
export const MAX_ROUTES_PER_WORKSPACE = 100;
/** Targets one route may list. */
export const MAX_ROUTE_TARGETS = 8;
/** The failures that may fall back to the next target, in the order they are returned. */
export const RETRY_ON_VALUES = ['429', '5xx', 'timeout', 'connection'] as const;
export type RetryOn = (typeof RETRY_ON_VALUES)[number];

const Name = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
  description:
    'Letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64 characters; unique among the workspace\'s routes. Called as model `route:<name>`.',
});

// Targets are checked field by field in the service, so that a bad one is named `targets[<i>].<field>`.
const Target = StrictObject({
  provider_credential_uuid: Type.String({ description: "One of the workspace's provider credentials." }),
  model: Type.String({ description: 'The upstream model, 1–256 characters, sent unchanged.' }),
});
const Targets = Type.Array(Target, {
  minItems: 1,
  maxItems: MAX_ROUTE_TARGETS,
  description: 'Tried in this order; a credential may appear more than once. Replaced whole on PATCH.',
});
const RetryOnSchema = Type.Array(Type.Union(RETRY_ON_VALUES.map((v) => Type.Literal(v))), {
  description:
    'Failures that fall back to the next target: "429", "5xx" (500–599), "timeout" (upstream_timeout), "connection" (upstream_unreachable). Distinct values; default all four; [] never falls back.',
});
const CacheTtl = Type.Union([Type.Integer({ minimum: 1, maximum: 86_400 }), Type.Null()], {
  description: 'Default cache policy of calls through the route, in seconds; null (default): not cached unless asked.',
});

export const RouteSchema = Type.Object(
  {
    uuid: UuidSchema,
    name: Type.String(),
    targets: Type.Array(Type.Object({ provider_credential_uuid: UuidSchema, model: Type.String() })),
    retry_on: Type.Array(Type.String(), { description: 'In the order "429", "5xx", "timeout", "connection".' }),
    cache_ttl_seconds: Type.Union([Type.Integer(), Type.Null()]),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { title: 'ModelRoute', description: 'A fallback route of the model proxy.' },
);
export type RouteView = Static<typeof RouteSchema>;

export const CreateRouteBody = StrictObject({
  name: Name,
  targets: Targets,
  retry_on: Type.Optional(RetryOnSchema),
  cache_ttl_seconds: Type.Optional(CacheTtl),
});
export type CreateRouteInput = Static<typeof CreateRouteBody>;

export const PatchRouteBody = StrictObject({
  name: Type.Optional(Name),
  targets: Type.Optional(Targets),
  retry_on: Type.Optional(RetryOnSchema),
  cache_ttl_seconds: Type.Optional(CacheTtl),
});
export type PatchRouteInput = Static<typeof PatchRouteBody>;

export const RouteParams = Type.Object({ uuid: UuidSchema });
export const RouteListReply = Type.Object({ routes: Type.Array(RouteSchema, { description: 'Newest first.' }) });
