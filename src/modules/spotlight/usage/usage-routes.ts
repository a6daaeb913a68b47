import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { pagination } from '../../../http/common-schemas.js';
import { errorResponses } from '../../../http/error-schemas.js';
import { principalOf } from '../../../http/guard.js';
import type { ApiKind } from './calls-rows.js';
import type { UsageQueries } from './usage-queries.js';
import { CallListQuery, CallListReply, CallParams, CallSchema, UsageQuery, UsageReply } from './usage-schemas.js';

const tags = ['model proxy'];
const config = { auth: 'user' as const };

/** The records of model calls and their totals (a JWT or a platform key). */
export function usageRoutes(queries: UsageQueries) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.get(
      '/spotlight/usage',
      {
        config,
        schema: {
          tags,
          summary: 'Model usage per day',
          description:
            'Totals per UTC day, provider credential, upstream model and endpoint kind (api), from..to inclusive (YYYY-MM-DD; default the 30 days up to today; at most 366 days), sorted by date, model, credential name, api. api keeps one kind. cost_usd comes from the price table.',
          querystring: UsageQuery,
          response: { 200: UsageReply },
        },
      },
      async (request) => {
        const { from, to, api } = request.query;
        return queries.usage(who(request), { from, to, api: api as ApiKind | undefined });
      },
    );

    app.get(
      '/spotlight/calls',
      {
        config,
        schema: {
          tags,
          summary: 'Model calls',
          description:
            'Every model call that selected a credential, newest first, filtered by task, agent, credential, platform key, route or endpoint kind (api).',
          querystring: CallListQuery,
          response: { 200: CallListReply },
        },
      },
      async (request) => {
        const { page, limit, task_id, agent_uuid, provider_credential_uuid, platform_key_uuid, route_uuid, api } =
          request.query;
        const filter = {
          taskUuid: task_id,
          agentUuid: agent_uuid,
          credentialUuid: provider_credential_uuid,
          platformKeyUuid: platform_key_uuid,
          routeUuid: route_uuid,
          api: api as ApiKind | undefined,
        };
        const { calls, total } = await queries.list(who(request), filter, page, limit);
        return { calls, pagination: pagination(page, limit, total) };
      },
    );

    app.get(
      '/spotlight/calls/:id',
      {
        config,
        schema: {
          tags,
          summary: 'One model call',
          description: 'The id is the X-Taskhook-Call-Id of the answer.',
          params: CallParams,
          response: { 200: CallSchema, ...errorResponses([404]) },
        },
      },
      async (request) => queries.get(who(request), request.params.id),
    );
  };
}
