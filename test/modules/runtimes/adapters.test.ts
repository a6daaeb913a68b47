import { type TSchema, Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { AppError, notFound } from '../../../src/http/errors.js';
import { RuntimeHeadersSchema } from '../../../src/modules/agents/runtime-schemas.js';
import {
  ADAPTERS_BY_TYPE,
  adaptersByType,
  createRuntimeCheck,
  registeredRuntimeSchemas,
  typeOfAdapter,
} from '../../../src/modules/runtimes/adapters.js';
import type { CheckContext, PushAdapter } from '../../../src/modules/runtimes/push-adapter.js';

/*
 * The registration table every place that knows runtime types reads: the agent routes' schema,
 * the create/update check and the dispatcher. One entry per push runtime, keyed by the literal
 * `type` of its own schema.
 */

const ROUTE = '00000000-0000-4000-8000-000000000001';
const CREDENTIAL = '00000000-0000-4000-8000-000000000002';

function context(seen: string[]): CheckContext {
  return {
    policy: {
      allowPrivate: false,
      lookup: async (host) => [{ address: host === 'public.test' ? '93.184.216.34' : '127.0.0.1', family: 4 }],
    },
    providers: {
      get: async (_workspace, uuid) => {
        seen.push(`credential ${uuid}`);
        if (uuid !== CREDENTIAL) throw notFound('Provider credential');
        return {} as never;
      },
    },
    routeExists: async (_workspace, uuid) => {
      seen.push(`route ${uuid}`);
      return uuid === ROUTE;
    },
  };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('INVALID_REQUEST');
  return String((err as AppError).details?.field);
}

describe('the push runtime registrations', () => {
  it('are keyed by their schema’s type literal: openai, http and a2a; worker is the built-in one, not an adapter', () => {
    expect(Object.keys(ADAPTERS_BY_TYPE).sort()).toEqual(['a2a', 'http', 'openai']);
    for (const [type, adapter] of Object.entries(ADAPTERS_BY_TYPE)) {
      expect(typeOfAdapter(adapter)).toBe(type);
      expect(adapter.schema.additionalProperties, type).toBe(false);
    }
  });

  it('refuse a schema without a string literal type', () => {
    const adapter: PushAdapter = { schema: Type.Object({ type: Type.String() }), build: () => ({}) as never };
    expect(() => typeOfAdapter(adapter)).toThrow(/literal/);
  });

  it('refuse the built-in type worker, a type registered twice, and a headers field of another shape', () => {
    const adapter = (type: string, extra: Record<string, TSchema> = {}): PushAdapter => ({
      schema: Type.Object({ type: Type.Literal(type), ...extra }, { additionalProperties: false }),
      build: () => ({}) as never,
    });
    expect(() => adaptersByType([adapter('worker')])).toThrow(/built-in type "worker"/);
    expect(() => adaptersByType([adapter('x'), adapter('y'), adapter('x')])).toThrow(/two push adapters .* "x"/);
    expect(() => adaptersByType([adapter('x', { headers: Type.Optional(Type.String()) })])).toThrow(
      /"x" has a headers field/,
    );
    expect(Object.keys(adaptersByType([adapter('x', { headers: Type.Optional(RuntimeHeadersSchema) })]))).toEqual([
      'x',
    ]);
  });

  it('make the runtime field: the worker variant first, then each adapter’s, discriminated by type on input', () => {
    const { input, response } = registeredRuntimeSchemas();
    const titles = (variants: Array<{ title?: string }>) => variants.map((v) => v.title);
    const expected = ['WorkerRuntime', 'OpenAiRuntime', 'HttpRuntime', 'A2aRuntime'];
    expect(titles((input as unknown as { oneOf: Array<{ title?: string }> }).oneOf)).toEqual(expected);
    expect((input as unknown as { discriminator: unknown }).discriminator).toEqual({ propertyName: 'type' });
    expect(titles((response as unknown as { anyOf: Array<{ title?: string }> }).anyOf)).toEqual(expected);
  });

  it('check each runtime with its own adapter’s check, and a worker with none', async () => {
    const seen: string[] = [];
    const check = createRuntimeCheck(context(seen));
    await check('w', { type: 'worker' });
    await check('w', { type: 'http', url: 'https://public.test/run' });
    await check('w', { type: 'a2a', agent_card_url: 'https://public.test/.well-known/agent-card.json' });
    await check('w', { type: 'openai', route_uuid: ROUTE });
    await check('w', { type: 'openai', provider_credential_uuid: CREDENTIAL, model: 'm' });
    expect(seen).toEqual([`route ${ROUTE}`, `credential ${CREDENTIAL}`]);

    expect(await refusal(check('w', { type: 'http', url: 'https://private.test/run' }))).toBe('runtime.url');
    expect(await refusal(check('w', { type: 'a2a', agent_card_url: 'ftp://public.test/card' }))).toBe(
      'runtime.agent_card_url',
    );
    expect(await refusal(check('w', { type: 'openai', route_uuid: CREDENTIAL }))).toBe('runtime.route_uuid');
    expect(await refusal(check('w', { type: 'openai', route_uuid: ROUTE, model: 'm' }))).toBe('runtime.route_uuid');
    expect(await refusal(check('w', { type: 'openai', model: 'm' }))).toBe('runtime.provider_credential_uuid');
    expect(await refusal(check('w', { type: 'openai', provider_credential_uuid: ROUTE, model: 'm' }))).toBe(
      'runtime.provider_credential_uuid',
    );
  });

  it('give http agents their lease_seconds as the run’s lease, 60 by default; the others none of their own', () => {
    const lease = ADAPTERS_BY_TYPE.http?.leaseSeconds;
    expect(lease?.({ type: 'http', url: 'https://public.test/', lease_seconds: 300 })).toBe(300);
    expect(lease?.({ type: 'http', url: 'https://public.test/' })).toBe(60);
    expect(ADAPTERS_BY_TYPE.openai?.leaseSeconds).toBeUndefined();
    expect(ADAPTERS_BY_TYPE.a2a?.leaseSeconds).toBeUndefined();
  });
});
