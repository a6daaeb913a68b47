import { type Static, Type } from '@sinclair/typebox';
import { StrictObject } from '../../../http/common-schemas.js';
import { RUNTIME_URL_LIMITS, RuntimeHeadersSchema } from '../../agents/runtime-schemas.js';

/** An agent that is an HTTP endpoint: the service POSTs each task to it, signed like callbacks. */
export const HttpRuntimeSchema = StrictObject(
  {
    type: Type.Literal('http', { description: 'The service POSTs each task to url (a task.run webhook).' }),
    url: Type.String({
      ...RUNTIME_URL_LIMITS,
      description: 'Absolute http(s) URL without credentials, query or fragment; private addresses are refused.',
    }),
    headers: Type.Optional(RuntimeHeadersSchema),
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 300, description: 'Time allowed for the answer; default 30.' }),
    ),
    lease_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600,
        description: 'The lease the agent holds after answering 202 (progress extends it by as much); default 60.',
      }),
    ),
  },
  { title: 'HttpRuntime' },
);
export type HttpRuntime = Static<typeof HttpRuntimeSchema>;
