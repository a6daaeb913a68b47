/** Pure rules of agents that are a model: the request, reading the answer, and failures. */

import { type Finding, findingsResultOf } from '../findings-fns.js';
import type { OpenAiRuntime } from './model-schema.js';

export interface ConversationMessage {
  role: 'user' | 'agent';
  content: string;
}

export type ModelOutcome =
  | { kind: 'completed'; result: { summary: string; findings: Finding[] } }
  | { kind: 'input_request'; message: string }
  | {
      kind: 'failed';
      retryable: boolean;
      retryAfterMs: number | null;
      message: string;
      /**
       * Set when the proxy refused the run: a reached budget (BUDGET_EXCEEDED), or a model without a
       * price while a budget applies (MODEL_NOT_PRICED); otherwise the failure is PROVIDER_ERROR.
       */
      code?: 'BUDGET_EXCEEDED' | 'MODEL_NOT_PRICED';
    };

export const REQUEST_INPUT_TOOL = {
  type: 'function',
  function: {
    name: 'request_input',
    description:
      'Ask the person who gave you this task a question when you cannot finish without their answer. The task waits until they reply.',
    parameters: {
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
    },
  },
} as const;

/** The chat-completion body of one run: exactly model, messages and the optional settings. */
export function chatRequestOf(runtime: OpenAiRuntime, conversation: ConversationMessage[]): Record<string, unknown> {
  const messages = [
    ...(runtime.system_prompt ? [{ role: 'system', content: runtime.system_prompt }] : []),
    ...conversation.map((m) => ({ role: m.role === 'user' ? 'user' : 'assistant', content: m.content })),
  ];
  return {
    // A route's targets each get their own model; the proxy takes the route from route_uuid.
    model: runtime.route_uuid === undefined ? runtime.model : `route:${runtime.route_uuid}`,
    messages,
    ...(runtime.temperature === undefined ? {} : { temperature: runtime.temperature }),
    ...(runtime.max_output_tokens === undefined ? {} : { max_completion_tokens: runtime.max_output_tokens }),
    ...(runtime.allow_input_requests ? { tools: [REQUEST_INPUT_TOOL] } : {}),
  };
}

/**
 * The task result of a model's text: `{summary, findings}` of a JSON object of that shape (a
 * surrounding ``` or ```json fence allowed, other keys dropped), else the text as the summary.
 */
export function resultOf(content: string): { summary: string; findings: Finding[] } {
  let t = content.trim();
  const lines = t.split('\n');
  if (lines.length >= 2 && /^```(json)?\s*$/.test(lines[0] ?? '') && (lines.at(-1) ?? '').trim() === '```') {
    t = lines.slice(1, -1).join('\n').trim();
  }
  try {
    const found = findingsResultOf(JSON.parse(t));
    if (found) return found;
  } catch {
    // not JSON: the text is the summary
  }
  return { summary: content, findings: [] };
}

/** The outcome of a 2xx answer: a completion, a question for the user, or not a chat completion. */
export function outcomeOfAnswer(answer: unknown, allowInputRequests: boolean): ModelOutcome {
  const choice = (answer as { choices?: unknown })?.choices;
  const message = Array.isArray(choice) ? (choice[0] as { message?: Record<string, unknown> })?.message : undefined;
  if (typeof message !== 'object' || message === null) {
    return {
      kind: 'failed',
      retryable: false,
      retryAfterMs: null,
      message: 'The provider answered with something other than a chat completion',
    };
  }
  if (allowInputRequests && Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls as Array<{ function?: { name?: unknown; arguments?: unknown } }>) {
      if (call?.function?.name !== 'request_input' || typeof call.function.arguments !== 'string') continue;
      try {
        const args = JSON.parse(call.function.arguments) as { message?: unknown };
        if (typeof args.message === 'string' && args.message.trim() !== '')
          return { kind: 'input_request', message: args.message };
      } catch {
        // malformed arguments: not a usable question
      }
    }
  }
  const content = typeof message.content === 'string' ? message.content : '';
  return { kind: 'completed', result: resultOf(content) };
}

/** Statuses worth another attempt: the provider was busy, slow, conflicting or broken. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
