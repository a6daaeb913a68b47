import { Type } from '@sinclair/typebox';

export const OpenAiErrorSchema = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String({
        description: "invalid_request_error for the proxy's own refusals; upstream_error otherwise.",
      }),
      param: Type.Union([Type.String(), Type.Null()]),
      code: Type.Union([Type.String(), Type.Null()], {
        description:
          "credential_not_found, model_not_found, invalid_task_id, budget_exceeded (429, type insufficient_quota), model_not_priced (400: a budget applies and the model has no price), upstream_error, upstream_unreachable, upstream_timeout, or the upstream's own code.",
      }),
    }),
  },
  {
    title: 'OpenAIError',
    description: "OpenAI's error shape: every error of /spotlight/v1 other than authentication and rate limit.",
  },
);

export const ChatCompletionBody = Type.Object(
  {
    model: Type.String({
      description: '<credential name>/<upstream model>, or the upstream model when X-Taskhook-Credential is sent.',
    }),
    messages: Type.Array(Type.Unknown(), { minItems: 1 }),
    stream: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: true,
    description: "OpenAI's chat-completion request; every other field is passed upstream unchanged.",
  },
);

export const ChatCompletionReply = Type.Unknown({
  description:
    'The upstream answer as it is: a chat completion (application/json), or for stream: true a text/event-stream of chat.completion.chunk events ending with data: [DONE].',
});

export const ResponsesBody = Type.Object(
  {
    model: Type.String({
      description:
        '<credential name>/<upstream model>, route:<name>, or the upstream model when X-Taskhook-Credential is sent.',
    }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown())])),
    stream: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: true,
    description:
      "OpenAI's Responses request; every other field is passed upstream unchanged (background: true is refused).",
  },
);

export const ResponsesReply = Type.Unknown({
  description:
    'The upstream answer as it is: a Response object (application/json), or for stream: true a text/event-stream of named Responses events (event: lines included) ending with response.completed, response.incomplete, response.failed or error.',
});

export const ModelListReply = Type.Unknown({
  description:
    '{"object": "list", "data": [model, …]}: ids are `<credential name>/<id>` unless X-Taskhook-Credential names one; routes follow as `route:<name>`.',
});
