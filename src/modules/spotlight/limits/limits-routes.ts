import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../../http/error-schemas.js';
import { actingOf, principalOf } from '../../../http/guard.js';
import {
  AgentLimitParams,
  KeyLimitParams,
  RateLimitListReply,
  RateLimitPatch,
  RateLimitSchema,
} from './limits-schemas.js';
import type { LimitsService } from './limits-service.js';

const tags = ['model proxy'];
/** Reads take a JWT or a platform key. */
const read = { auth: 'user' as const };
/** A key must not lift its own limit: writes take a session. */
const write = { auth: 'session' as const };
const reply = { 200: RateLimitSchema, ...errorResponses([400, 404]) };
const WRITE_NOTE =
  ' A session JWT only (a platform key gets 403). Fields left out keep their value; null removes a limit; rpm is an integer 1–1,000,000, tpm an integer 1–1,000,000,000. Applies from the next admission on. Audited as rate_limit.update.';
const COUNTING =
  ' A call over a limit is answered 429 rate_limit_exceeded with Retry-After and X-Taskhook-Rate-Limit-Scope, before anything goes upstream and without a record.';

/** RPM/TPM limits of the model proxy under /spotlight/rate_limits. */
export function limitsRoutes(service: LimitsService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.get(
      '/spotlight/rate_limits',
      {
        config: read,
        schema: {
          tags,
          summary: 'Every requests- and tokens-per-minute limit',
          description: 'Each agent, then each platform key, with a limit, with the counts of the current UTC minute.',
          response: { 200: RateLimitListReply },
        },
      },
      async (request) => ({ rate_limits: await service.list(who(request)) }),
    );

    app.get(
      '/spotlight/rate_limits/platform_keys/:keyUuid',
      {
        config: read,
        schema: {
          tags,
          summary: 'A platform key’s rate limits',
          description: `For the model calls the key authenticates (revoked keys too).${COUNTING}`,
          params: KeyLimitParams,
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'platform_key', request.params.keyUuid),
    );

    app.patch(
      '/spotlight/rate_limits/platform_keys/:keyUuid',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set a platform key’s rate limits',
          description: `rpm, tpm.${WRITE_NOTE}`,
          params: KeyLimitParams,
          body: RateLimitPatch,
          response: reply,
        },
      },
      async (request) => service.patch(actingOf(request), 'platform_key', request.params.keyUuid, request.body),
    );

    app.get(
      '/spotlight/rate_limits/agents/:agentId',
      {
        config: read,
        schema: {
          tags,
          summary: 'An agent’s rate limits',
          description: `For the model calls attributed to any task of the agent (X-Taskhook-Task-Id, or its openai runtime).${COUNTING}`,
          params: AgentLimitParams,
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'agent', request.params.agentId),
    );

    app.patch(
      '/spotlight/rate_limits/agents/:agentId',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set an agent’s rate limits',
          description: `rpm, tpm. Deleting the agent deletes its limits.${WRITE_NOTE}`,
          params: AgentLimitParams,
          body: RateLimitPatch,
          response: reply,
        },
      },
      async (request) => service.patch(actingOf(request), 'agent', request.params.agentId, request.body),
    );
  };
}
