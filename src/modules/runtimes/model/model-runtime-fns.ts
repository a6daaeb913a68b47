/** Pure rules of agents that are a model: the request, reading the answer, and failures. */

/** The stored runtime of such an agent. */
export interface OpenAiRuntime {
  type: 'openai';
  provider_credential_uuid: string;
  model: string;
  system_prompt?: string;
  temperature?: number;
  max_output_tokens?: number;
  allow_input_requests?: boolean;
}

export interface ConversationMessage {
  role: 'user' | 'agent';
  content: string;
}

export interface Finding {
  file: string;
  line: number;
  severity: string;
  message: string;
}

export type ModelOutcome =
  | { kind: 'completed'; result: { summary: string; findings: Finding[] } }
  | { kind: 'input_request'; message: string }
  | { kind: 'failed'; retryable: boolean; retryAfterMs: number | null; message: string };

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
    model: runtime.model,
    messages,
    ...(runtime.temperature === undefined ? {} : { temperature: runtime.temperature }),
    ...(runtime.max_output_tokens === undefined ? {} : { max_completion_tokens: runtime.max_output_tokens }),
    ...(runtime.allow_input_requests ? { tools: [REQUEST_INPUT_TOOL] } : {}),
  };
}

const isFinding = (f: unknown): f is Finding => {
  const o = f as Record<string, unknown>;
  return (
    typeof f === 'object' &&
    f !== null &&
    !Array.isArray(f) &&
    typeof o.file === 'string' &&
    typeof o.line === 'number' &&
    typeof o.severity === 'string' &&
    typeof o.message === 'string'
  );
};

/**
 * `{summary, findings}` of a value of that shape (an object whose `summary` is a string and whose
 * `findings` are all findings; other keys dropped), else null. The rule every runtime uses to read
 * an agent's structured result (a model's JSON text, an A2A data part).
 */
export function findingsResultOf(value: unknown): { summary: string; findings: Finding[] } | null {
  const o = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  if (typeof o.summary !== 'string' || !Array.isArray(o.findings) || !o.findings.every(isFinding)) return null;
  const findings = (o.findings as Finding[]).map(({ file, line, severity, message }) => ({
    file,
    line,
    severity,
    message,
  }));
  return { summary: o.summary, findings };
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

/** Milliseconds asked for by `retry-after-ms` or `retry-after` (seconds or an HTTP date), if any. */
export function retryAfterMs(headers: Record<string, string | undefined>, now: number): number | null {
  const ms = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers['retry-after'];
  if (raw === undefined) return null;
  if (/^\d+(\.\d+)?$/.test(raw.trim())) return Number(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * When a task whose attempt `attempt` (1-based) failed retryably may be handed out again: 1 s,
 * then 2 s, or the provider's Retry-After when longer, at most 60 s.
 */
export function retryDelayMs(attempt: number, askedMs: number | null): number {
  const backoff = 1000 * 2 ** (attempt - 1);
  return Math.max(backoff, Math.min(askedMs ?? 0, 60_000));
}
