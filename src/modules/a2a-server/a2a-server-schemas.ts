import { Type } from '@sinclair/typebox';
import { UuidSchema } from '../../http/common-schemas.js';

export const A2aParams = Type.Object({ agentId: UuidSchema });

const Open = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const AgentCardSchema = Type.Object(
  {
    name: Type.String({ description: "The agent's name." }),
    description: Type.String({ description: "The agent's description (empty when it has none)." }),
    version: Type.String(),
    supportedInterfaces: Type.Array(
      Type.Object({ url: Type.String(), protocolBinding: Type.String(), protocolVersion: Type.String() }),
      { description: 'JSON-RPC, then HTTP+JSON, both at {base_url}/a2a/<agent uuid>, A2A 1.0.' },
    ),
    provider: Type.Object({ organization: Type.String(), url: Type.String() }),
    capabilities: Type.Object({
      streaming: Type.Boolean(),
      pushNotifications: Type.Boolean(),
      extendedAgentCard: Type.Boolean(),
    }),
    securitySchemes: Open('platform_key (x-service-api-key header) and bearer (a platform key or a session JWT).'),
    securityRequirements: Type.Array(Open('Either scheme.')),
    defaultInputModes: Type.Array(Type.String()),
    defaultOutputModes: Type.Array(Type.String()),
    skills: Type.Array(
      Type.Object({
        id: Type.String(),
        name: Type.String(),
        description: Type.String(),
        tags: Type.Array(Type.String()),
      }),
    ),
  },
  { title: 'AgentCard', description: 'An A2A v1.0 agent card (ProtoJSON field names).' },
);

export const CARD_DESCRIPTION = `The A2A v1.0 agent card of a taskhook agent (any runtime). It takes a platform key (\`x-service-api-key\`, \`x-api-key\` or \`Authorization: Bearer\`) or a session JWT, like the rest of the API; another user's or an unknown agent is 404.`;

export const RPC_DESCRIPTION = `A2A v1.0 over JSON-RPC 2.0: the agent's tasks for any A2A client (e.g. \`@a2a-js/sdk\`).
Send \`A2A-Version: 1.0\` (without it the request is A2A 0.3 and is refused with -32009) and a JSON-RPC request
\`{"jsonrpc": "2.0", "id", "method", "params"}\` as \`application/json\`.

Authentication (401/403 flat), the rate limit (429), the body size (413) and the agent (404 NOT_FOUND) are
checked first and answer with the API's usual statuses. Every other answer is HTTP 200: a JSON-RPC result or
error object, or for the streaming methods a \`text/event-stream\` whose events are
\`data: {"jsonrpc": "2.0", "id", "result": <StreamResponse>}\`.

Methods: \`SendMessage\` (a new task, or with \`message.taskId\` a message to one; waits up to
TASKHOOK_A2A_MAX_WAIT_SECONDS for the task to finish or ask for input unless \`configuration.returnImmediately\`),
\`SendStreamingMessage\`, \`GetTask\`, \`CancelTask\`, \`SubscribeToTask\`, \`ListTasks\`. Push-notification
configuration methods answer -32003, \`GetExtendedAgentCard\` -32004. The same operations are served over HTTP+JSON under this URL.

Errors: -32700 parse, -32600 invalid request (batches and notifications included), -32601 unknown method, -32602
invalid params, -32001 task not found, -32002 not cancelable, -32003 push notifications not supported, -32004
unsupported operation (finished task, paused agent), -32005 content type not supported (\`url\`/\`raw\` parts),
-32009 version not supported. A user with as many open waits or streams as allowed gets 429 LIMIT_EXCEEDED.`;

export const RpcResponseSchema = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Union([Type.String(), Type.Number(), Type.Null()]),
    result: Type.Optional(Open('The method result: a Task, {task}, or a ListTasks page.')),
    error: Type.Optional(
      Type.Object({ code: Type.Integer(), message: Type.String(), data: Type.Optional(Open('Details.')) }),
    ),
  },
  { title: 'JsonRpcResponse', description: 'A JSON-RPC 2.0 response.' },
);

export const REST_DESCRIPTION = `A2A 1.0's HTTP+JSON binding of the agent, beside its JSON-RPC endpoint: the same operations on
the same tasks, with the same results and errors. Paths are relative to \`/a2a/{agentId}\`: \`POST /message:send\`,
\`POST /message:stream\`, \`GET /tasks\`, \`GET /tasks/{id}\`, \`POST /tasks/{id}:cancel\`, \`POST|GET
/tasks/{id}:subscribe\`, \`/tasks/{id}/pushNotificationConfigs[/{configId}]\` and \`GET /extendedAgentCard\`.

Send \`A2A-Version: 1.0\` (or the query parameter \`A2A-Version=1.0\`). Bodies are ProtoJSON objects typed
\`application/a2a+json\` or \`application/json\` (another type: 415); an empty body is \`{}\`. Answers are
\`application/a2a+json\` (\`application/json\` when \`Accept\` asks only for that); streams are
\`text/event-stream\` with one \`data: <StreamResponse>\` line per event. Errors are \`{"error": google.rpc.Status}\`
with an ErrorInfo (\`domain\` a2a-protocol.org) naming the A2A error, or a BadRequest naming the field; an unknown
path is 404, a known path with another method 405 with \`Allow\`. Credentials, rate limit, body size, role and the
agent (404 NOT_FOUND) are checked first, with the API's usual shapes.`;

/** A2A's own error body on the HTTP+JSON binding. */
export const RestErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.Integer(),
      status: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Array(Open('A google.rpc.ErrorInfo or google.rpc.BadRequest.'))),
    }),
  },
  { title: 'A2aRestError', description: 'An A2A error on the HTTP+JSON binding (google.rpc.Status).' },
);

/** The A2A statuses of the HTTP+JSON binding's own errors. */
export function restErrorResponses() {
  const error = (description: string) => ({
    description,
    content: { 'application/a2a+json': { schema: RestErrorSchema } },
  });
  return {
    400: error('An A2A error: invalid parameters, a task not cancelable, an unsupported version or operation.'),
    404: error("Task or path not found (an unknown agent answers NOT_FOUND in the API's error shape)."),
    405: error('A known path with another method; `Allow` lists its methods.'),
    415: error('A request body of another media type than JSON.'),
  };
}
