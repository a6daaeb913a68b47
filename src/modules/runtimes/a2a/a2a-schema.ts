import { type Static, Type } from '@sinclair/typebox';
import { StrictObject } from '../../../http/common-schemas.js';
import { RUNTIME_URL_LIMITS, RuntimeHeadersSchema } from '../../agents/runtime-schemas.js';

/** An agent that is a remote A2A agent: the service is its A2A client. */
export const A2aRuntimeSchema = StrictObject(
  {
    type: Type.Literal('a2a', { description: 'The service drives a remote A2A 1.0 agent.' }),
    agent_card_url: Type.String({ ...RUNTIME_URL_LIMITS, description: "The remote agent card's full URL." }),
    headers: Type.Optional(RuntimeHeadersSchema),
  },
  { title: 'A2aRuntime' },
);

/** Such an agent's runtime; a push run sees its header values already decrypted. */
export type A2aRuntime = Static<typeof A2aRuntimeSchema>;
